//! Argument completion (`completion/complete`): what a client asks to complete, and the
//! suggestions the server answers.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The most values one completion may carry.
pub const MAX_COMPLETION_VALUES: usize = 100;

/// What the argument being completed belongs to.
///
/// More kinds of reference may come in a minor release: a `match` on one needs a `_` arm
/// (answering no suggestions).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum CompletionReference {
    /// An argument of a prompt (`ref/prompt`).
    #[serde(rename = "ref/prompt")]
    Prompt {
        /// The prompt's name.
        name: String,
        /// Its display name, if the client sent one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    /// A variable of a resource template, or of a resource (`ref/resource`).
    #[serde(rename = "ref/resource")]
    Resource {
        /// The URI template (or URI).
        uri: String,
    },
}

/// The argument being completed and what the user has typed of it.
///
/// The router reads it from the request; [`CompletionArgument::new`] builds one (to call a
/// completion handler in a test). More fields may come in a minor release.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CompletionArgument {
    /// The argument's name.
    pub name: String,
    /// Its partial value.
    pub value: String,
}

impl CompletionArgument {
    /// The argument `name`, of which the user has typed `value`.
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        CompletionArgument {
            name: name.into(),
            value: value.into(),
        }
    }
}

/// The context of a completion.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CompletionContext {
    /// Arguments already resolved, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
}

/// `completion/complete` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CompleteParams {
    /// The prompt or resource the argument belongs to.
    #[serde(rename = "ref")]
    pub reference: CompletionReference,
    /// The argument.
    pub argument: CompletionArgument,
    /// Arguments already resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompletionContext>,
}

/// The suggestions for one argument (the `completion` of a `CompleteResult`):
/// [`Completion::new`] or [`Completion::matching`], then the setters. More fields may come in a
/// minor release.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Completion {
    /// The suggested values, best first; at most 100 are sent.
    pub values: Vec<String>,
    /// How many values there are in all, when known (may exceed `values`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more values than those sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

impl Completion {
    /// The suggestions `values`.
    pub fn new(values: Vec<String>) -> Self {
        Completion {
            values,
            total: None,
            has_more: None,
        }
    }

    /// The candidates that start with `prefix`, in the order given.
    pub fn matching<I>(candidates: I, prefix: &str) -> Self
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        Completion::new(
            candidates
                .into_iter()
                .filter(|candidate| candidate.as_ref().starts_with(prefix))
                .map(|candidate| candidate.as_ref().to_owned())
                .collect(),
        )
    }

    /// Sets how many values there are in all (may exceed the values given).
    #[must_use]
    pub fn total(mut self, total: u64) -> Self {
        self.total = Some(total);
        self
    }

    /// Sets whether there are more values than those given.
    #[must_use]
    pub fn has_more(mut self, has_more: bool) -> Self {
        self.has_more = Some(has_more);
        self
    }

    /// The completion as it may be sent: cut to 100 values, with
    /// `hasMore` set and `total` counting every value when it had more.
    #[must_use]
    pub fn truncated(mut self) -> Self {
        let count = self.values.len();
        if count > MAX_COMPLETION_VALUES {
            self.values.truncate(MAX_COMPLETION_VALUES);
            self.has_more = Some(true);
            self.total = Some(self.total.unwrap_or(0).max(count as u64));
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn params_read_both_kinds_of_reference() {
        let params: CompleteParams = serde_json::from_value(json!({
            "ref": { "type": "ref/prompt", "name": "p" },
            "argument": { "name": "a", "value": "x" },
            "context": { "arguments": { "b": "y" } },
        }))
        .unwrap();
        assert_eq!(
            params.reference,
            CompletionReference::Prompt {
                name: "p".to_owned(),
                title: None
            }
        );
        assert_eq!(params.context.unwrap().arguments.unwrap()["b"], "y");
        let params: CompleteParams = serde_json::from_value(json!({
            "ref": { "type": "ref/resource", "uri": "file:///{path}" },
            "argument": { "name": "path", "value": "" },
        }))
        .unwrap();
        assert_eq!(
            params.reference,
            CompletionReference::Resource {
                uri: "file:///{path}".to_owned()
            }
        );
        let unknown = json!({ "ref": { "type": "ref/tool", "name": "t" },
                              "argument": { "name": "a", "value": "" } });
        assert!(serde_json::from_value::<CompleteParams>(unknown).is_err());
    }

    #[test]
    fn truncation_keeps_the_first_hundred_and_says_there_are_more() {
        let values: Vec<String> = (0..150).map(|n| n.to_string()).collect();
        let cut = Completion::new(values).truncated();
        assert_eq!(cut.values.len(), MAX_COMPLETION_VALUES);
        assert_eq!(cut.values[99], "99");
        assert_eq!((cut.total, cut.has_more), (Some(150), Some(true)));
        assert_eq!(
            json!(cut)["hasMore"],
            json!(true),
            "the wire name is camelCase"
        );

        let mut large = Completion::new(vec!["a".to_owned(); 101]);
        large.total = Some(5_000);
        assert_eq!(large.truncated().total, Some(5_000), "a larger total stays");

        let small = Completion::matching(["paris", "park", "rome"], "par").truncated();
        assert_eq!(small.values, ["paris", "park"]);
        assert_eq!(json!(small), json!({ "values": ["paris", "park"] }));
    }
}
