//! Outside text made safe to show and to keep (issue 17).
//!
//! Strings that came from a server or a file (model names, HELP texts, error bodies, label
//! values, URLs) reach terminals, logs, web pages and the store. Three things go wrong with them:
//! - **terminal control**: an escape sequence in a model name retitles or clears the user's
//!   terminal, a CR/LF forges output lines. [`terminal`] shows every control character escaped
//!   (`\x1b`, `\r`, `\n`, `\u{202e}`), so the text prints as one inert line.
//! - **markup**: a label value `<script>` on a status page or in a report. [`html`] escapes
//!   `& < > " '` and control characters, for element content and attribute values alike.
//! - **secrets**: a 401 body that echoes the bearer token, a token in a URL's query string. Every
//!   secret the process is given (API key, bearer token, basic-auth password, header values)
//!   enters as a [`Secret`] (or through [`register_secret`]) where it enters a client; [`redact`]
//!   removes every registered secret and every secret-shaped thing (`Bearer …`, `Basic …`,
//!   `token=…` query parameters, `user:password@` in URLs) from a string before it is stored or
//!   printed. It is the one redactor: URLs echoed in error messages go through it too.
//!
//! [`clean`] is both, for text that is printed; [`redact`] alone for text that is stored (the
//! store keeps the exact bytes, a renderer makes them terminal-safe when showing them).
//!
//! The registry is process-global on purpose: secrets are known at the command line's edge and
//! text reaches the store and the terminal through many layers; a registry cannot be forgotten
//! on one of those paths. Registering is idempotent and cheap; redacting costs one scan per
//! registered secret.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::RwLock;

/// What a removed secret is replaced with.
pub const REDACTED: &str = "***";

/// Secrets shorter than this are not registered: replacing a 1–3 character string everywhere
/// would wreck unrelated text, and such a value protects nothing.
const MIN_SECRET_LEN: usize = 4;

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Query parameters whose values are secrets (compared case-insensitively).
const SECRET_PARAMS: &[&str] = &[
    "token",
    "access_token",
    "id_token",
    "refresh_token",
    "api_key",
    "apikey",
    "api-key",
    "key",
    "password",
    "passwd",
    "secret",
    "client_secret",
    "auth",
    "authorization",
    "signature",
    "sig",
    "x-amz-signature",
    "x-amz-security-token",
];

/// Registers `secret` (trimmed) so that [`redact`] removes it from every later string.
pub fn register_secret(secret: &str) {
    let secret = secret.trim();
    if secret.len() < MIN_SECRET_LEN {
        return;
    }
    let mut all = SECRETS.write().unwrap_or_else(|e| e.into_inner());
    if !all.iter().any(|s| s == secret) {
        all.push(secret.to_owned());
        // Longest first, so a secret that contains another is removed whole.
        all.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }
}

/// A credential (API key, bearer token, password): its `Debug` and `Display` never show it, and
/// it is never serialised. Making one registers it, so [`redact`] removes it from every later
/// string (issue 17).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `secret` and registers it ([`register_secret`]).
    pub fn new(secret: impl Into<String>) -> Self {
        let secret = secret.into();
        register_secret(&secret);
        Secret(secret)
    }

    /// The value itself, for the one place that sends it (an `Authorization` header).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether `Bearer <secret>` is a valid HTTP header value: no control byte but tab (no CR,
    /// LF, NUL or DEL), as `http::HeaderValue::from_str` requires.
    pub fn fits_a_header(&self) -> bool {
        self.0.bytes().all(|b| (b >= 32 && b != 127) || b == b'\t')
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(REDACTED)
    }
}

/// `text` with every registered secret and every secret-shaped thing replaced by [`REDACTED`].
pub fn redact(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    {
        let all = SECRETS.read().unwrap_or_else(|e| e.into_inner());
        for s in all.iter() {
            if out.contains(s.as_str()) {
                out = Cow::Owned(out.replace(s.as_str(), REDACTED));
            }
        }
    }
    for pass in [redact_auth_words, redact_userinfo, redact_query] {
        if let Some(r) = pass(&out) {
            out = Cow::Owned(r);
        }
    }
    out
}

/// `Bearer xyz` / `Basic xyz` (any case) → `Bearer ***`.
fn redact_auth_words(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    if !lower.contains("bearer ") && !lower.contains("basic ") {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = 0;
    let mut changed = false;
    let bytes = lower.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let hit = ["bearer ", "basic "].into_iter().find(|w| {
            bytes[i..].starts_with(w.as_bytes())
                && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric())
        });
        let Some(w) = hit else {
            i += 1;
            continue;
        };
        let start = i + w.len();
        let end = start
            + text[start..]
                .find(|c: char| {
                    c.is_whitespace() || matches!(c, '"' | '\'' | ',' | ';' | '}' | ')')
                })
                .unwrap_or(text.len() - start);
        if looks_like_token(&text[start..end]) {
            out.push_str(&text[rest..start]);
            out.push_str(REDACTED);
            rest = end;
            changed = true;
        }
        i = end.max(i + 1);
    }
    out.push_str(&text[rest..]);
    changed.then_some(out)
}

/// A credential after `Bearer`/`Basic`: 8+ characters with a digit or one of `._-+/=~` (so
/// "Basic authentication failed" keeps its words; a registered secret is removed regardless).
fn looks_like_token(word: &str) -> bool {
    word.len() >= 8
        && !word.starts_with(REDACTED)
        && word
            .chars()
            .any(|c| c.is_ascii_digit() || "._-+/=~".contains(c))
}

/// In every URL of `text`: `user:password@` → `***@`.
///
/// A text that begins with a URL is that URL (a flag's value, a stored target): everything
/// between `://` and its last `@` is user info, whatever the password holds (`/`, `?`, `,`, a
/// space, a quote). Inside running text a URL ends at whitespace, a quote or an angle bracket
/// (so `{"url":"http://h","m":"a@b"}` keeps its `@`), and its user info ends at its last `@`.
fn redact_userinfo(text: &str) -> Option<String> {
    let mut out = String::new();
    let (mut copied, mut from) = (0, 0);
    while let Some(i) = text[from..].find("://") {
        let start = from + i + 3;
        let end = if from == 0 && begins_with_url(text) {
            text.len()
        } else {
            text[start..]
                .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>'))
                .map_or(text.len(), |n| start + n)
        };
        if let Some(at) = text[start..end].rfind('@')
            && at > 0
            && &text[start..start + at] != REDACTED
        {
            out.push_str(&text[copied..start]);
            out.push_str(REDACTED);
            copied = start + at;
        }
        from = end.max(start);
    }
    (copied > 0).then(|| out + &text[copied..])
}

/// Whether `text` (leading whitespace aside) begins with `scheme://`.
fn begins_with_url(text: &str) -> bool {
    let text = text.trim_start();
    text.find("://").is_some_and(|i| {
        let scheme = &text[..i];
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    })
}

/// In every query string of `text`: secret parameter values → `***`.
fn redact_query(text: &str) -> Option<String> {
    if !text.contains("://") && !text.contains('?') {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut rest = text;
    while let Some(at) = rest.find(['?', '&']) {
        let (before, tail) = rest.split_at(at);
        out.push_str(before);
        out.push_str(&tail[..1]);
        let tail = &tail[1..];
        let end = tail
            .find(|c: char| c.is_whitespace() || matches!(c, '&' | '#' | '"' | '\'' | '>' | ')'))
            .unwrap_or(tail.len());
        let param = &tail[..end];
        match param.split_once('=') {
            Some((name, value))
                if !value.is_empty()
                    && value != REDACTED
                    && SECRET_PARAMS.iter().any(|p| p.eq_ignore_ascii_case(name)) =>
            {
                let _ = write!(out, "{name}={REDACTED}");
                changed = true;
            }
            _ => out.push_str(param),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    changed.then_some(out)
}

/// `text` with every control character shown escaped: C0 controls (`\n`, `\r`, `\t`, `\x1b`…),
/// DEL, C1 controls and the bidirectional overrides that reorder what a terminal shows.
pub fn terminal(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x100 && is_unsafe(c) => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if is_unsafe(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` safe inside HTML element content and attribute values: `& < > " '` as entities, and
/// control characters but newline and tab as numeric references (`&#27;`), so an escape
/// sequence in a label value reaches neither the markup nor a terminal showing the source.
pub fn html(text: &str) -> Cow<'_, str> {
    let special = |c: char| matches!(c, '&' | '<' | '>' | '"' | '\'') || html_control(c);
    if !text.contains(special) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if html_control(c) => {
                let _ = write!(out, "&#{};", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

fn html_control(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// `text`, or its first `max` bytes (on a character boundary) and how long the whole was: an
/// upstream error text is capped before it is redacted, kept or printed (a 50 MB error body
/// was logged whole by each failed evaluation, and `/readyz` answered it).
pub fn excerpt(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}… ({} bytes in all)", &text[..end], text.len()))
}

/// Bytes of an upstream error text kept ([`excerpt`]).
pub const ERROR_TEXT_KEPT: usize = 4_096;

/// Text from outside, ready to print: secrets redacted, then control characters escaped.
pub fn clean(text: &str) -> String {
    terminal(&redact(text)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 50 MB error text is kept as its first 4 KiB and its length; a short one whole.
    #[test]
    fn an_error_text_is_capped_before_it_is_kept() {
        let huge = "é".repeat(25_000_000);
        let kept = excerpt(&huge, ERROR_TEXT_KEPT);
        assert!(kept.len() < ERROR_TEXT_KEPT + 64, "{}", kept.len());
        assert!(
            kept.ends_with("… (50000000 bytes in all)"),
            "{}",
            &kept[kept.len() - 40..]
        );
        assert!(matches!(excerpt("bad_data", 8), Cow::Borrowed("bad_data")));
    }

    /// Redaction and terminal escaping grow linearly with hostile text: each shape an error body
    /// might repeat (`@`, `://`, `Bearer `, `?a=`, escapes) at n and 10·n, timed side by side
    /// (the fastest of five runs each); linear is ~10×, the quadratic redactor this replaced
    /// took 30 s for 100 KB of `@` (~100×). The bound leaves room for a noisy machine.
    #[test]
    fn cleaning_hostile_text_grows_linearly() {
        let fastest = |text: &str| {
            (0..5)
                .map(|_| {
                    let t = std::time::Instant::now();
                    std::hint::black_box(clean(std::hint::black_box(text)));
                    t.elapsed().as_secs_f64()
                })
                .fold(f64::INFINITY, f64::min)
        };
        for unit in [
            "a@",
            "x://u:p@",
            "Bearer abc.def9 ",
            "?token=s3cret&",
            "\x1b]0;t\x07@",
        ] {
            let small = unit.repeat(20_000 / unit.len());
            let large = unit.repeat(200_000 / unit.len());
            let ratio = fastest(&large) / fastest(&small).max(1e-6);
            assert!(
                ratio < 40.0,
                "{unit:?}: 10x the text took {ratio:.0}x the time"
            );
        }
    }

    #[test]
    fn escapes_and_line_breaks_become_visible() {
        let evil = "evil\x1b]0;PWNED\x07\x1b[2J\r\nFAKE: ok\u{202e}";
        let shown = terminal(evil);
        assert_eq!(
            shown,
            "evil\\x1b]0;PWNED\\x07\\x1b[2J\\r\\nFAKE: ok\\u{202e}"
        );
        assert!(!shown.chars().any(char::is_control));
        assert!(matches!(terminal("Qwen/Qwen2.5-3B é"), Cow::Borrowed(_)));
        assert_eq!(terminal("a\u{9b}b"), "a\\x9bb", "C1 CSI");
    }

    #[test]
    fn registered_secrets_are_removed_everywhere() {
        register_secret("  SECRET-registered-123\n");
        register_secret("ab"); // too short: ignored
        let body = r#"{"error":"token SECRET-registered-123 is not valid for ab"}"#;
        assert_eq!(redact(body), r#"{"error":"token *** is not valid for ab"}"#);
    }

    #[test]
    fn secret_shapes_are_removed_without_registration() {
        assert_eq!(
            redact("401: Authorization: Bearer eyJhbGciOi.x.y rejected"),
            "401: Authorization: Bearer *** rejected"
        );
        assert_eq!(redact("basic dXNlcjpwdw=="), "basic ***");
        assert_eq!(
            redact("GET http://h:9090/api/v1/query?query=up&access_token=abc123&x=1 failed"),
            "GET http://h:9090/api/v1/query?query=up&access_token=***&x=1 failed"
        );
        assert_eq!(
            redact("see http://u:pw@host/m now"),
            "see http://***@host/m now"
        );
        assert_eq!(redact("mail a@b.c"), "mail a@b.c", "not a URL");
        let json = r#"{"url":"http://host","m":"a@b"}"#;
        assert_eq!(redact(json), json, "an @ after a URL, not inside it");
        assert_eq!(
            redact("Basic authentication failed"),
            "Basic authentication failed"
        );
        assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
        assert_eq!(
            redact("é bearer tok-12345 ü basic é"),
            "é bearer *** ü basic é",
            "UTF-8"
        );
    }

    /// The redactor is the union of the three it replaced (issue 30): the URL-only ones of
    /// `collect::url` and loadgen's target parser hid everything up to a URL's last `@`; this one
    /// also knew query tokens and `Bearer` words. One case per difference.
    #[test]
    fn redacts_what_every_former_redactor_caught() {
        // Passwords the old word-scanner missed (a `/`, `?`, `#`, `,` or `;` inside them).
        assert_eq!(redact("http://u:pa/ss@h:80/m"), "http://***@h:80/m");
        assert_eq!(redact("http://u:p?x#y@h/"), "http://***@h/");
        assert_eq!(redact("see http://u:p,w;x@h now"), "see http://***@h now");
        assert_eq!(
            redact("http://u:p@ss@h/m"),
            "http://***@h/m",
            "an @ in the password"
        );
        // A text that is a URL: a space or a quote in the password does not end it.
        assert_eq!(redact("http://u:p w\"x@h/m"), "http://***@h/m");
        assert_eq!(redact("  https://u:p'w@h"), "  https://***@h");
        // What the URL-only redactors missed.
        assert_eq!(redact("http://h/m?token=abc123"), "http://h/m?token=***");
        assert_eq!(redact("auth: Bearer tok-12345"), "auth: Bearer ***");
        // Unchanged: no user info, an @ after a URL in running text, already redacted.
        assert!(matches!(redact("http://x/m"), Cow::Borrowed(_)));
        assert_eq!(redact("got http://h/m then a@b"), "got http://h/m then a@b");
        assert!(matches!(redact("http://***@h/m"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_secret_never_shows_itself() {
        let s = Secret::new("sk-shown-nowhere-1");
        assert_eq!(format!("{s:?} {s}"), "Secret(***) ***");
        assert_eq!(s.expose(), "sk-shown-nowhere-1");
        assert_eq!(redact("key sk-shown-nowhere-1"), "key ***", "registered");
        assert!(s.fits_a_header());
        assert!(Secret::new("ab\tcd").fits_a_header(), "a tab is allowed");
        for bad in ["sk-bad\r\nX-Injected: 1", "sk-bad\0", "sk-bad\x7f"] {
            assert!(!Secret::new(bad).fits_a_header(), "{bad:?}");
        }
    }

    #[test]
    fn html_escapes_markup_and_controls() {
        assert_eq!(
            html("<script>alert('x')</script> & \"q\"\u{1b}[31m"),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;&#27;[31m"
        );
        assert_eq!(html("a\nb\tc\rd"), "a\nb\tc&#13;d", "newline and tab kept");
        assert!(matches!(html("Qwen/Qwen2.5-3B é"), Cow::Borrowed(_)));
    }

    proptest::proptest! {
        /// Any text: no panic, nothing a terminal interprets survives, and a registered
        /// secret never survives redaction, wherever it sits.
        #[test]
        fn any_text_is_made_safe(text in ".{0,200}", at in 0usize..200) {
            register_secret("SECRET-prop-7777");
            let mut cut = at.min(text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            let with = format!("{}SECRET-prop-7777{}", &text[..cut], &text[cut..]);
            let shown = clean(&with);
            proptest::prop_assert!(!shown.chars().any(is_unsafe));
            proptest::prop_assert!(!shown.contains("SECRET-prop-7777"));
        }
    }

    #[test]
    fn clean_does_both() {
        assert_eq!(clean("Bearer tok-12345\r\n"), "Bearer ***\\r\\n");
    }
}
