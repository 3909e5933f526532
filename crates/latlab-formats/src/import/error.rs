//! The one error every importer returns: the file, the line when there is one, what is
//! wrong and what would fix it.

use std::fmt;

/// Why a file could not be imported. Displays as `FILE:LINE: problem` (or `FILE: problem`
/// when no line applies); the problem says what is wrong and what would fix it.
#[derive(Debug)]
pub struct ImportError {
    /// The file as the user named it.
    pub file: String,
    /// The 1-based line the problem was found on, when it is about one line.
    pub line: Option<u64>,
    /// What is wrong, and what would fix it.
    pub problem: String,
    source: Option<std::io::Error>,
}

impl ImportError {
    /// A problem on one line of `file`.
    pub(crate) fn at(file: &str, line: u64, problem: impl ToString) -> ImportError {
        ImportError {
            file: file.to_string(),
            line: Some(line),
            problem: problem.to_string(),
            source: None,
        }
    }

    /// A problem with the file as a whole.
    pub(crate) fn whole(file: &str, problem: impl ToString) -> ImportError {
        ImportError {
            file: file.to_string(),
            line: None,
            problem: problem.to_string(),
            source: None,
        }
    }

    /// The file could not be read.
    pub(crate) fn io(file: &str, line: Option<u64>, error: std::io::Error) -> ImportError {
        ImportError {
            file: file.to_string(),
            line,
            problem: format!("could not read the file: {error}"),
            source: Some(error),
        }
    }
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file, self.problem),
            None => write!(f, "{}: {}", self.file, self.problem),
        }
    }
}

impl std::error::Error for ImportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_file_and_line() {
        let e = ImportError::at("hist.txt", 12, "bad row: fix it");
        assert_eq!(e.to_string(), "hist.txt:12: bad row: fix it");
        let e = ImportError::whole("a.json", "empty");
        assert_eq!(e.to_string(), "a.json: empty");
    }
}
