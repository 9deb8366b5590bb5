//! `application/x-www-form-urlencoded`, as forms post it and as queries
//! carry it.

/// The fields of a form or query, in order.
#[derive(Debug, Default)]
pub struct Form(Vec<(String, String)>);

impl Form {
    pub fn parse(text: &str) -> Form {
        Form(
            text.split('&')
                .filter(|pair| !pair.is_empty())
                .map(|pair| {
                    let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
                    (decode(name), decode(value))
                })
                .collect(),
        )
    }

    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// `+` is a space and `%XX` a byte; a `%` not followed by two hex digits
/// stays as it is.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                {
                    Some(byte) => {
                        out.push(byte);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_decoded() {
        let form = Form::parse("note=rm+-rf+%2Ftmp%2Fx&ttl=60&bad=%zz&end=%4");
        assert_eq!(form.get("note"), Some("rm -rf /tmp/x"));
        assert_eq!(form.get("ttl"), Some("60"));
        assert_eq!(form.get("bad"), Some("%zz"));
        assert_eq!(form.get("end"), Some("%4"));
        assert_eq!(form.get("csrf"), None);
    }
}
