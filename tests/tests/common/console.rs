//! The operator's web console over plain HTTP/1.1: a login and the pages,
//! as a browser would fetch them.

use std::io::{Read, Write};
use std::net::TcpStream;

use super::Daemon;

/// An HTTP/1.1 answer: status, header lines, body.
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One request on its own connection (`Connection: close`), `host` the
/// `host:port` to connect to; `extra` are more header lines.
pub fn http(host: &str, method: &str, path: &str, extra: &[(&str, &str)], body: &str) -> Answer {
    let mut stream = TcpStream::connect(host).expect("connect");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    // Read to the body's end as its head says: a WebDriver server may keep
    // the connection open whatever was asked.
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    let complete = |raw: &[u8]| -> bool {
        let text = String::from_utf8_lossy(raw);
        let Some((head, rest)) = text.split_once("\r\n\r\n") else {
            return false;
        };
        let head = head.to_ascii_lowercase();
        if head.contains("transfer-encoding: chunked") {
            return rest.ends_with("0\r\n\r\n");
        }
        head.lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|n| n.trim().parse::<usize>().ok())
            .is_some_and(|n| rest.len() >= n)
    };
    while !complete(&raw) {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let chunked = headers.iter().any(|(n, v)| {
        n.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_owned()
    };
    Answer {
        status,
        headers,
        body,
    }
}

fn dechunk(mut rest: &str) -> String {
    let mut body = String::new();
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        body.push_str(&tail[..size]);
        rest = &tail[size + 2..];
    }
    body
}

/// `host:port` and the login URL's path of `praxis console --url`.
pub fn login_url(d: &Daemon) -> (String, String, String) {
    let out = d.praxis(&["console", "--url"]);
    assert!(out.status.success(), "{out:?}");
    let url = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let rest = url
        .strip_prefix("http://127.0.0.1:")
        .unwrap_or_else(|| panic!("not a loopback URL: {url}"));
    let (port, path) = rest.split_once('/').unwrap();
    (format!("127.0.0.1:{port}"), format!("/{path}"), url)
}

/// A logged-in session's `Cookie` value, from the login URL's path.
pub fn log_in(host: &str, login: &str) -> String {
    let entered = http(host, "GET", login, &[], "");
    assert_eq!(entered.status, 303, "{}", entered.body);
    let cookie = entered.header("set-cookie").unwrap();
    cookie.split(';').next().unwrap().to_owned()
}

/// The value of the first form field `name` on `page`.
pub fn field(page: &str, name: &str) -> String {
    page.split(&format!("name=\"{name}\" value=\""))
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no field {name} on the page: {page}"))
        .to_owned()
}
