//! The user's name, tags and note for a run (`--name`, `--tag`, `--note`), checked
//! before any work is done, and given to the Runs made.

use crate::error::CliError;
use latlab_model::labels::{check_name, check_note, parse_tag};
use latlab_model::run::Run;
use latlab_store::RunStore;
use std::collections::BTreeMap;

/// Checked labels.
#[derive(Debug, Default)]
pub struct Labels {
    name: Option<String>,
    tags: BTreeMap<String, String>,
    note: Option<String>,
}

impl Labels {
    /// Checks what `--name`, each `--tag` and `--note` gave; a bad one is a usage
    /// error naming its flag (exit 2).
    pub fn checked(
        name: Option<&str>,
        tags: &[String],
        note: Option<&str>,
    ) -> Result<Labels, CliError> {
        if let Some(name) = name {
            check_name(name).map_err(|e| CliError::usage("--name", e))?;
        }
        let mut checked = BTreeMap::new();
        for text in tags {
            let (key, value) = parse_tag(text).map_err(|e| CliError::usage("--tag", e))?;
            checked.insert(key, value);
        }
        if let Some(note) = note {
            check_note(note).map_err(|e| CliError::usage("--note", e))?;
        }
        Ok(Labels {
            name: name.map(str::to_string),
            tags: checked,
            note: note.map(str::to_string),
        })
    }

    /// The name given, if any.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Refuses a name another run in `store` has already (exit 2): a name stands for
    /// one run. The store's unique index on names refuses it again at the save, when
    /// another latlab took the name in between.
    pub fn check_name_is_free(&self, store: &dyn RunStore) -> Result<(), CliError> {
        match &self.name {
            Some(name) => refuse_taken_name(store, name, "--name"),
            None => Ok(()),
        }
    }

    /// Gives `run` the name and note given, and adds the tags (a tag given replaces the
    /// run's own with that key).
    pub fn apply(&self, run: &mut Run) {
        if let Some(name) = &self.name {
            run.name = Some(name.clone());
        }
        if let Some(note) = &self.note {
            run.note = Some(note.clone());
        }
        run.tags
            .extend(self.tags.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
}

/// Refuses `name` (given with `flag`, or held by a file) when a run in `store` has it
/// already (exit 2).
pub fn refuse_taken_name(store: &dyn RunStore, name: &str, flag: &str) -> Result<(), CliError> {
    let holder = store
        .summaries()
        .map_err(CliError::runtime)?
        .into_iter()
        .find(|r| r.name.as_deref() == Some(name));
    match holder {
        None => Ok(()),
        Some(run) => Err(CliError::usage(
            flag,
            latlab_store::StoreError::NameTaken {
                location: store.location(),
                name: name.to_string(),
                holder: Some(run.id),
            },
        )),
    }
}
