//! Reading a text result file line by line, with line numbers for messages and a bound on
//! line length, so a binary or foreign file gives an error instead of filling memory.

use super::ImportError;
use std::io::BufRead;

/// Longest line a text result format has (a histogram row of a 1024-CPU machine is
/// about 10 KB).
const MAX_LINE: usize = 1 << 20;

/// The lines of a text file, numbered from 1, without their line ending.
pub(super) struct Lines<'f, R> {
    input: R,
    file: &'f str,
    number: u64,
    line: Vec<u8>,
    complete: bool,
}

impl<'f, R: BufRead> Lines<'f, R> {
    pub(super) fn new(input: R, file: &'f str) -> Self {
        Lines {
            input,
            file,
            number: 0,
            line: Vec::new(),
            complete: true,
        }
    }

    /// The number of the line last returned (0 before the first).
    pub(super) fn number(&self) -> u64 {
        self.number
    }

    /// At the end of the file: an error when its last line has no line ending, which the
    /// tools always write, so the file is likely cut off.
    pub(super) fn check_complete(&self) -> Result<(), ImportError> {
        if self.complete {
            return Ok(());
        }
        Err(ImportError::at(
            self.file,
            self.number,
            "the last line has no line ending: the file is probably truncated (if it is \
             complete, add a line break at its end)",
        ))
    }

    /// The next line and its number, or `None` at the end of the file.
    pub(super) fn next_line(&mut self) -> Result<Option<(u64, &str)>, ImportError> {
        self.line.clear();
        let mut ended = false;
        loop {
            let available = match self.input.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(ImportError::io(self.file, Some(self.number + 1), e)),
            };
            if available.is_empty() {
                break;
            }
            let (take, found) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (available.len(), false),
            };
            if self.line.len() + take > MAX_LINE {
                return Err(ImportError::at(
                    self.file,
                    self.number + 1,
                    "line longer than 1 MiB: this is not a text result file of the \
                     format named (name the right format, or check the file)",
                ));
            }
            self.line.extend_from_slice(&available[..take]);
            self.input.consume(take);
            if found {
                ended = true;
                break;
            }
        }
        if self.line.is_empty() && !ended {
            return Ok(None);
        }
        self.number += 1;
        self.complete = ended;
        while matches!(self.line.last(), Some(b'\n' | b'\r')) {
            self.line.pop();
        }
        let number = self.number;
        std::str::from_utf8(&self.line)
            .map(|l| Some((number, l)))
            .map_err(|_| {
                ImportError::at(
                    self.file,
                    self.number,
                    "not text (invalid UTF-8): this is not a result file of the format named",
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_lines_and_strips_endings() {
        let mut lines = Lines::new("a\r\nb\n\nc".as_bytes(), "f");
        let mut got = Vec::new();
        while let Some((n, l)) = lines.next_line().unwrap() {
            got.push((n, l.to_string()));
        }
        let want = [(1, "a"), (2, "b"), (3, ""), (4, "c")];
        assert_eq!(got, want.map(|(n, s)| (n, s.to_string())));
    }

    #[test]
    fn refuses_binary() {
        let mut lines = Lines::new(&[b'o', 0xff, b'\n'][..], "f");
        assert_eq!(
            lines.next_line().unwrap_err().to_string(),
            "f:1: not text (invalid UTF-8): this is not a result file of the format named"
        );
    }
}
