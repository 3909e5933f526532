//! A request target's parts, percent-decoded.

/// The value of parameter `name` in `query`, when given and not empty.
pub fn given<'a>(query: &'a [(String, String)], name: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(n, v)| n == name && !v.is_empty())
        .map(|(_, v)| v.as_str())
}

/// A query string's parameters, decoded (`+` is a space); `None` when one is not
/// valid percent-encoded UTF-8.
pub fn parsed_query(query: &str) -> Option<Vec<(String, String)>> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            Some((decoded(name, true)?, decoded(value, true)?))
        })
        .collect()
}

/// `text` with its `%XX` escapes decoded, and `+` as a space in a query (`plus`);
/// `None` when an escape is broken or the result is not UTF-8.
pub fn decoded(text: &str, plus: bool) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' if plus => {
                out.push(b' ');
                i += 1;
            }
            byte => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_decoded() {
        assert_eq!(
            parsed_query("host=rig+1&kernel=6.18%2A&tag=board%3Dx1&&since=").unwrap(),
            [
                ("host".to_string(), "rig 1".to_string()),
                ("kernel".to_string(), "6.18*".to_string()),
                ("tag".to_string(), "board=x1".to_string()),
                ("since".to_string(), String::new()),
            ]
        );
        assert_eq!(decoded("/run/a+b", false).unwrap(), "/run/a+b");
        assert_eq!(decoded("%C3%A9", true).unwrap(), "é");
        assert!(decoded("%zz", true).is_none());
        assert!(decoded("%4", true).is_none());
        assert!(decoded("%FF", true).is_none(), "not UTF-8");
    }
}
