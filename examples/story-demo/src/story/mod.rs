//! Stories: the format ([`format`](mod@format)), the checks a story passes when loaded ([`validate`]),
//! and the deterministic walk that tells it ([`walk`]).

pub mod format;
pub mod prng;
mod svg;
pub mod validate;
pub mod walk;

use std::fmt;

pub use format::Story;
pub use validate::{Location, Problem, ProblemKind, ValidStory};
pub use walk::{ActionChoice, ActionSet, Answer, BeatMeta, Choice, Event, Walk};

/// Why a story file could not be loaded.
#[derive(Debug)]
pub enum LoadError {
    /// The file is not a story: bad JSON, a missing or misspelt field, a wrong type. The
    /// message names the path of the field, e.g. `nodes[3].then`.
    Parse(String),
    /// The story parsed but breaks the story rules: every problem found, not just the first.
    Invalid(Vec<Problem>),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Parse(message) => write!(f, "the story does not parse: {message}"),
            LoadError::Invalid(problems) => {
                write!(f, "the story has {} problem(s):", problems.len())?;
                for problem in problems {
                    write!(f, "\n- {problem}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for LoadError {}

/// Parses a story file and validates it.
pub fn load(json: &str) -> Result<ValidStory, LoadError> {
    let mut deserializer = serde_json::Deserializer::from_str(json);
    let story: Story = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        LoadError::Parse(format!("at `{path}`: {}", error.into_inner()))
    })?;
    ValidStory::new(story).map_err(LoadError::Invalid)
}
