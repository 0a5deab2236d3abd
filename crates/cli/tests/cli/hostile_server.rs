//! A small hostile HTTP server for the hostile-input suite (issue 17): plain threads on
//! `127.0.0.1:0`, one mode per path. It serves what a broken or malicious exporter might:
//!
//! - `/random`: 64 KiB of pseudo-random bytes as `text/plain`;
//! - `/broken`: a page with broken lines and a duplicate series;
//! - `/quoted`: a page saved as one JSON string (`"# HELP …\n…"`);
//! - `/evil`: HELP texts holding terminal escapes and CR/LF;
//! - `/endless`: a chunked body that never ends (until the client hangs up);
//! - `/bomb`: a gzip body that inflates to 150 MiB (from ~1 MiB on the wire);
//! - `/silent`: reads the request and never answers;
//! - `/401…`: a 401 whose body echoes the `Authorization` and `X-Scope-OrgID` headers and the
//!   request line (so a token in the URL comes back too), like some proxies do;
//! - `/prom/api/v1/query_range`: a Prometheus that answers every name with a warning holding
//!   terminal escapes, and `vllm:num_requests_running` with the range asked for (4 running)
//!   plus [`PROM_EXTRA`] points from 2023 and a repeat of each asked point;
//! - `/soak/…`: a Prometheus hostile in turn, request by request ([`SOAK_MODES`]): the answer
//!   of `/prom`, a 16 MiB error text of `@`s and escapes, 40,000 distinct warnings, silence,
//!   random bytes, and an empty success.
//!
//! The listener is bound before its port is known, so there is no bind-and-drop race.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// A running hostile server; stops accepting when dropped.
pub struct Hostile {
    pub addr: String,
    stop: Arc<AtomicBool>,
}

impl Hostile {
    pub fn start() -> Hostile {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap().to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stopping.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let stopping = stopping.clone();
                std::thread::spawn(move || serve(conn, &stopping));
            }
        });
        Hostile { addr, stop }
    }

    /// `http://ADDR/PATH`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(&self.addr); // wakes the accept loop
    }
}

/// The request line and headers (lower-cased names).
fn read_request(conn: &TcpStream) -> Option<(String, Vec<(String, String)>)> {
    let mut r = BufReader::new(conn.try_clone().ok()?);
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).ok()? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    Some((line.trim().to_owned(), headers))
}

fn serve(mut conn: TcpStream, stop: &AtomicBool) {
    let Some((line, headers)) = read_request(&conn) else {
        return;
    };
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
            .to_owned()
    };
    let _ = match path.split('?').next().unwrap_or("") {
        "/random" => respond(&mut conn, 200, "text/plain", &[], &random_bytes(64 << 10)),
        "/broken" => respond(&mut conn, 200, "text/plain", &[], BROKEN.as_bytes()),
        "/quoted" => {
            let quoted = serde_json::to_string(GOOD).unwrap();
            respond(&mut conn, 200, "text/plain", &[], quoted.as_bytes())
        }
        "/evil" => respond(&mut conn, 200, "text/plain", &[], EVIL.as_bytes()),
        "/endless" => endless(&mut conn),
        "/bomb" => respond(
            &mut conn,
            200,
            "text/plain",
            &[("Content-Encoding", "gzip")],
            &gzip_bomb(150 << 20),
        ),
        "/silent" => {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
            }
            Ok(())
        }
        p if p.starts_with("/soak/") => soak(&mut conn, &line, stop),
        "/prom/api/v1/query_range" => {
            let body = prom_range(line.split_whitespace().nth(1).unwrap_or(""));
            respond(&mut conn, 200, "application/json", &[], body.as_bytes())
        }
        p if p.starts_with("/401") || p.starts_with("/api/") => {
            let body = format!(
                "{{\"status\":\"error\",\"error\":\"unauthorized: {} rejected for org {} on {}\"}}",
                header("authorization"),
                header("x-scope-orgid"),
                line
            );
            respond(&mut conn, 401, "application/json", &[], body.as_bytes())
        }
        _ => respond(&mut conn, 404, "text/plain", &[], b"not here\n"),
    };
}

/// The hostile answers of `/soak/…`, taken in turn.
pub const SOAK_MODES: [&str; 6] = [
    "points from 2023",
    "a 16 MiB error text",
    "40,000 warnings",
    "silence",
    "random bytes",
    "an empty success",
];

static SOAK_TURN: AtomicUsize = AtomicUsize::new(0);
static ERROR_TEXT: OnceLock<Vec<u8>> = OnceLock::new();
static WARNINGS: OnceLock<Vec<u8>> = OnceLock::new();

/// A large answer made once (the soak measures watch, not this server's formatting).
fn soak_body(cell: &'static OnceLock<Vec<u8>>, make: fn() -> String) -> &'static [u8] {
    cell.get_or_init(|| make().into_bytes())
}

fn soak_error() -> String {
    let text = "@\\u001b[2J@user:pass@".repeat((16 << 20) / 20);
    format!(r#"{{"status":"error","errorType":"bad_data","error":"{text}"}}"#)
}

fn soak_warnings() -> String {
    let warnings: Vec<String> = (0..40_000).map(|i| format!(r#""warning {i}""#)).collect();
    format!(
        r#"{{"status":"success","warnings":[{}],"data":{{"resultType":"matrix","result":[]}}}}"#,
        warnings.join(",")
    )
}

/// The next of [`SOAK_MODES`], whatever was asked.
fn soak(conn: &mut TcpStream, line: &str, stop: &AtomicBool) -> std::io::Result<()> {
    let json = "application/json";
    match SOAK_TURN.fetch_add(1, Ordering::Relaxed) % SOAK_MODES.len() {
        0 => {
            let target = line.split_whitespace().nth(1).unwrap_or("");
            respond(conn, 200, json, &[], prom_range(target).as_bytes())
        }
        1 => respond(conn, 422, json, &[], soak_body(&ERROR_TEXT, soak_error)),
        2 => respond(conn, 200, json, &[], soak_body(&WARNINGS, soak_warnings)),
        3 => {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
            }
            Ok(())
        }
        4 => respond(conn, 200, json, &[], &random_bytes(1 << 20)),
        _ => respond(
            conn,
            200,
            json,
            &[],
            br#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#,
        ),
    }
}

/// Points from 2023 in the hostile Prometheus' answer for the running gauge.
pub const PROM_EXTRA: usize = 100_000;

/// `%XX`-decoded `s` (`+` is a space).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The hostile Prometheus' answer to a range query (see the module docs).
fn prom_range(target: &str) -> String {
    let params: Vec<(String, String)> = target
        .split_once('?')
        .map_or("", |(_, q)| q)
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), percent_decode(v)))
        .collect();
    let get = |k: &str| {
        params
            .iter()
            .find(|(n, _)| n == k)
            .map_or("", |(_, v)| v.as_str())
    };
    let num = |k: &str| get(k).parse::<f64>().unwrap_or(0.0);
    let (start, end, step) = (num("start"), num("end"), num("step").max(1.0));
    let warning = r#""warnings":["evil\u001b]0;PWNED\u0007\u001b[2J\r\nFAKE: partial response"]"#;
    if !get("query").contains("\"vllm:num_requests_running\"") {
        return format!(
            r#"{{"status":"success",{warning},"data":{{"resultType":"matrix","result":[]}}}}"#
        );
    }
    static FROM_2023: OnceLock<String> = OnceLock::new();
    let from_2023 = FROM_2023.get_or_init(|| {
        let points: Vec<String> = (0..PROM_EXTRA)
            .map(|k| format!(r#"[{},"4"]"#, 1_680_000_000 + k))
            .collect();
        points.join(",")
    });
    let mut values = vec![from_2023.clone()];
    let mut t = start;
    while t <= end {
        values.push(format!(r#"[{t:.3},"4"]"#));
        values.push(format!(r#"[{t:.3},"4"]"#));
        t += step;
    }
    format!(
        r#"{{"status":"success",{warning},"data":{{"resultType":"matrix","result":[{{"metric":{{"__name__":"vllm:num_requests_running","pod":"p"}},"values":[{}]}}]}}}}"#,
        values.join(",")
    )
}

fn respond(
    conn: &mut TcpStream,
    status: u16,
    ctype: &str,
    extra: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    conn.write_all(head.as_bytes())?;
    conn.write_all(body)?;
    conn.flush()
}

/// Valid-looking chunks for ever: only the client's body cap or timeout ends it.
fn endless(conn: &mut TcpStream) -> std::io::Result<()> {
    conn.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n",
    )?;
    let chunk: String = (0..1000).map(|i| format!("m{{i=\"{i}\"}} 1\n")).collect();
    let framed = format!("{:x}\r\n{chunk}\r\n", chunk.len());
    loop {
        conn.write_all(framed.as_bytes())?;
    }
}

/// xorshift bytes: deterministic noise.
pub fn random_bytes(n: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// A gzip member whose deflate stream (one fixed-Huffman block: a literal `0`, then
/// back-references of 258 bytes at distance 1) inflates to about `size` zero bytes. Written by
/// hand: compressing that much with a library in a debug build takes seconds. The trailer's
/// CRC is not computed — a reader must stop at its cap long before it.
pub fn gzip_bomb(size: usize) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    let mut bits = BitWriter::default();
    bits.put(1, 1); // BFINAL
    bits.put(1, 2); // BTYPE = 01, fixed Huffman
    bits.code(0b0011_0000, 8); // literal 0
    for _ in 0..size / 258 {
        bits.code(0b1100_0101, 8); // length code 285 = 258
        bits.code(0, 5); // distance code 0 = 1
    }
    bits.code(0, 7); // end of block (256)
    out.extend(bits.finish());
    out.extend([0; 8]); // CRC32 and ISIZE, not computed
    out
}

#[derive(Default)]
struct BitWriter {
    out: Vec<u8>,
    acc: u32,
    n: u32,
}

impl BitWriter {
    /// `n` bits of `v`, least significant first (header fields, extra bits).
    fn put(&mut self, v: u32, n: u32) {
        self.acc |= v << self.n;
        self.n += n;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    /// A Huffman code of `n` bits, most significant first.
    fn code(&mut self, code: u32, n: u32) {
        let rev = code.reverse_bits() >> (32 - n);
        self.put(rev, n);
    }

    fn finish(mut self) -> Vec<u8> {
        if self.n > 0 {
            self.out.push(self.acc as u8);
        }
        self.out
    }
}

/// A clean page (quoted as JSON by `/quoted`).
pub const GOOD: &str = "# HELP up Whether the target is up.\n# TYPE up gauge\nup 1\n";

/// Broken lines (3 and 5) and a duplicate series (line 6).
pub const BROKEN: &str = "# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine=\"0\"} 3
vllm:num_requests_waiting{engine=\"0\" 2
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine=\"0\"} 0.1 zz
vllm:num_requests_running{engine=\"0\"} 4
";

/// HELP texts with an OSC title change, a screen clear, and a forged line (raw CR, escaped LF).
pub const EVIL: &str = "# HELP evil_metric evil\x1b]0;PWNED\x07\x1b[2J\r\\nFAKE: all good
# TYPE evil_metric gauge
evil_metric 1
";

#[test]
fn the_bomb_inflates_to_its_size() {
    use std::io::Read;
    let bomb = gzip_bomb(1 << 20);
    let mut d = flate2::read::GzDecoder::new(&bomb[..]);
    let mut got = Vec::new();
    let _ = d.read_to_end(&mut got); // the CRC is not computed: an error at the very end
    assert_eq!(got.len(), 1 + (1 << 20) / 258 * 258);
    assert!(got.iter().all(|b| *b == 0));
}
