//! `praxis-run api METHOD PATH`: one request to praxisd's judge API (the
//! API socket beside its request socket), the body from stdin, the answer's
//! JSON body on stdout. Adapters of other runtimes use it for recall and
//! write-back without knowing where praxisd listens.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;

use praxis_proto::Layout;

use crate::client::{self, ClientError};

/// The API socket's name, beside the request socket.
pub const API_SOCKET: &str = "praxisd-api.sock";

/// Sends one request; the status and the body of the answer. A user-mode
/// praxisd that is not running is started first, as for any command.
pub fn call(method: &str, path: &str, body: &str) -> Result<(u16, String), ClientError> {
    if !matches!(method, "GET" | "POST") || !path.starts_with("/v1/") {
        return Err(ClientError::Refused(format!(
            "not a judge API request: {method} {path}"
        )));
    }
    drop(client::connect()?);
    let socket = Layout::detect().socket.with_file_name(API_SOCKET);
    let mut stream = UnixStream::connect(&socket).map_err(|e| ClientError::Unreachable {
        socket: socket.display().to_string(),
        why: e.to_string(),
    })?;
    let deadline = Some(crate::deadline::decision());
    stream.set_read_timeout(deadline)?;
    stream.set_write_timeout(deadline)?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: praxisd\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer)?;
    parse_answer(&String::from_utf8_lossy(&answer))
}

/// The status and body of an HTTP/1.1 answer with a `Content-Length` body
/// (what the API sends).
fn parse_answer(answer: &str) -> Result<(u16, String), ClientError> {
    let bad = || ClientError::Refused(String::from("the API's answer is not HTTP/1.1"));
    let (head, body) = answer.split_once("\r\n\r\n").ok_or_else(bad)?;
    let status = head
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .ok_or_else(bad)?;
    Ok((status, body.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_reads_as_status_and_body_and_other_text_is_refused() {
        let (status, body) =
            parse_answer("HTTP/1.1 422 Unprocessable Entity\r\ncontent-length: 2\r\n\r\n{}")
                .unwrap();
        assert_eq!((status, body.as_str()), (422, "{}"));
        assert!(parse_answer("SSH-2.0-x\r\n\r\n").is_err());
        assert!(call("DELETE", "/v1/judge/recall", "").is_err());
        assert!(call("GET", "/etc/passwd", "").is_err());
    }
}
