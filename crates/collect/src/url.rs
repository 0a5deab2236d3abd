//! URLs of targets and servers: `http`/`https` only, no credentials inside (they would end up in
//! the store and in messages), and [`redact`] for echoing bad input safely.
//!
//! [`redact`] is [`llmscope_core::safe::redact`], the one redactor, as an owned `String`.

use hyper::Uri;

/// Parses an absolute `http://` or `https://` URL without user info.
pub fn parse_http_url(text: &str) -> Result<Uri, &'static str> {
    let uri: Uri = text.trim().parse().map_err(|_| "not a URL")?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        Some(_) => return Err("only http:// and https:// are supported"),
        None => return Err("missing http:// or https://"),
    }
    let auth = uri.authority().ok_or("missing host")?;
    if auth.as_str().contains('@') {
        return Err("credentials in the URL are not allowed; use the auth flags");
    }
    if auth.host().is_empty() {
        return Err("missing host");
    }
    Ok(uri)
}

/// `http://user:pw@host/x` → `http://***@host/x` (and every other secret-shaped thing removed):
/// [`llmscope_core::safe::redact`], owned.
pub fn redact(text: &str) -> String {
    llmscope_core::safe::redact(text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_http_and_https() {
        assert_eq!(
            parse_http_url("http://127.0.0.1:9090/prometheus")
                .unwrap()
                .path(),
            "/prometheus"
        );
        assert!(parse_http_url("https://[::1]:8443/").is_ok());
    }

    #[test]
    fn rejects_and_never_echoes_secrets() {
        assert_eq!(
            parse_http_url("127.0.0.1:80"),
            Err("missing http:// or https://")
        );
        assert!(parse_http_url("ftp://x/").is_err());
        assert!(
            parse_http_url("http://u:p@x/")
                .unwrap_err()
                .contains("credentials")
        );
        assert_eq!(redact("http://u:secret@x/m"), "http://***@x/m");
        assert_eq!(redact("http://x/m"), "http://x/m");
        assert_eq!(
            redact("http://u:pa/ss@x/m?access_token=t0k"),
            "http://***@x/m?access_token=***",
            "the one redactor: user info and query tokens"
        );
    }
}
