//! What a foreign file lacked, noted by the importers as they read it and recorded in
//! the Run's `import.lacks`.

/// What the source lacked, as sentences.
#[derive(Default)]
pub(super) struct Provenance {
    lacks: Vec<String>,
}

impl Provenance {
    /// Notes something the source did not have (once; not at all when an importer
    /// already said it with its reason: "no period: oslat measures ...").
    pub(super) fn lack(&mut self, sentence: impl Into<String>) {
        let sentence = sentence.into();
        let said = |l: &String| *l == sentence || l.starts_with(&format!("{sentence}:"));
        if !self.lacks.iter().any(said) {
            self.lacks.push(sentence);
        }
    }

    /// The sentences, in the order first noted.
    pub(super) fn into_lacks(self) -> Vec<String> {
        self.lacks
    }
}
