//! Prompts: their descriptors (`prompts/list`), the params of `prompts/get`, and the messages
//! a prompt expands to.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::tools::Content;

/// A prompt or prompt template as `prompts/list` describes it: [`Prompt::new`], then the
/// setters. More fields may come in a minor release.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Prompt {
    /// The name clients get it by.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it provides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments it is templated with, in the order a client should ask for them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgument>,
}

impl Prompt {
    /// A prompt named `name`, taking no arguments.
    pub fn new(name: impl Into<String>) -> Self {
        Prompt {
            name: name.into(),
            title: None,
            description: None,
            arguments: Vec::new(),
        }
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the display title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Adds an argument.
    #[must_use]
    pub fn argument(mut self, argument: PromptArgument) -> Self {
        self.arguments.push(argument);
        self
    }

    /// The names of the arguments marked required that `arguments` lacks, in declaration
    /// order.
    pub fn missing_arguments<'a>(&'a self, arguments: &BTreeMap<String, String>) -> Vec<&'a str> {
        self.arguments
            .iter()
            .filter(|argument| argument.required == Some(true))
            .filter(|argument| !arguments.contains_key(&argument.name))
            .map(|argument| argument.name.as_str())
            .collect()
    }
}

/// One argument of a [`Prompt`]. Argument values are strings.
///
/// [`PromptArgument::new`], then the setters; more fields may come in a minor release.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PromptArgument {
    /// Its name (the key in `prompts/get` `arguments`).
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `true` when `prompts/get` must carry it (the router refuses a request without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
}

impl PromptArgument {
    /// An optional argument named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        PromptArgument {
            name: name.into(),
            title: None,
            description: None,
            required: None,
        }
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the display title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Marks it required.
    #[must_use]
    pub fn required(mut self) -> Self {
        self.required = Some(true);
        self
    }
}

/// Who a [`PromptMessage`] is from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The model.
    Assistant,
}

/// One message of an expanded prompt: [`PromptMessage::user`], [`PromptMessage::assistant`] or
/// [`PromptMessage::new`]. More fields may come in a minor release.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PromptMessage {
    /// Who it is from.
    pub role: Role,
    /// What it says: text, an image, audio, a resource link or an embedded resource.
    pub content: Content,
}

impl PromptMessage {
    /// A message from `role`.
    pub fn new(role: Role, content: Content) -> Self {
        PromptMessage { role, content }
    }

    /// A message from the user.
    pub fn user(content: Content) -> Self {
        PromptMessage {
            role: Role::User,
            content,
        }
    }

    /// A message from the model.
    pub fn assistant(content: Content) -> Self {
        PromptMessage {
            role: Role::Assistant,
            content,
        }
    }
}

/// What `prompts/get` answers: the prompt expanded with its arguments.
///
/// [`GetPromptResult::new`] or [`GetPromptResult::user_text`], then the setters; more fields
/// may come in a minor release.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GetPromptResult {
    /// What this expansion is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages, in order.
    pub messages: Vec<PromptMessage>,
}

impl GetPromptResult {
    /// A result of `messages`.
    pub fn new(messages: Vec<PromptMessage>) -> Self {
        GetPromptResult {
            description: None,
            messages,
        }
    }

    /// A result of one text message from the user.
    pub fn user_text(text: impl Into<String>) -> Self {
        GetPromptResult::new(vec![PromptMessage::user(Content::text(text))])
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// `prompts/get` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GetPromptParams {
    /// The prompt to expand.
    pub name: String,
    /// Its arguments, all strings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
    /// Answers to the input requests of an earlier `InputRequiredResult`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<Map<String, Value>>,
    /// The `requestState` of that result, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_prompt_serialises_with_the_wire_names_and_without_empty_fields() {
        let prompt = Prompt::new("review")
            .title("Code review")
            .argument(
                PromptArgument::new("code")
                    .description("The code")
                    .required(),
            )
            .argument(PromptArgument::new("style"));
        assert_eq!(
            json!(prompt),
            json!({
                "name": "review",
                "title": "Code review",
                "arguments": [
                    { "name": "code", "description": "The code", "required": true },
                    { "name": "style" },
                ],
            })
        );
        assert_eq!(json!(Prompt::new("bare")), json!({ "name": "bare" }));
    }

    #[test]
    fn missing_arguments_names_only_the_required_ones_absent() {
        let prompt = Prompt::new("p")
            .argument(PromptArgument::new("a").required())
            .argument(PromptArgument::new("b"))
            .argument(PromptArgument::new("c").required());
        let given = BTreeMap::from([("c".to_owned(), String::new())]);
        assert_eq!(prompt.missing_arguments(&given), ["a"]);
        assert_eq!(prompt.missing_arguments(&BTreeMap::new()), ["a", "c"]);
    }

    #[test]
    fn messages_carry_a_lowercase_role_and_a_content_block() {
        let result = GetPromptResult::user_text("hi").description("greeting");
        assert_eq!(
            json!(result),
            json!({
                "description": "greeting",
                "messages": [{ "role": "user", "content": { "type": "text", "text": "hi" } }],
            })
        );
    }

    #[test]
    fn get_params_refuse_an_argument_that_is_not_a_string() {
        let params = json!({ "name": "p", "arguments": { "n": 3 } });
        assert!(serde_json::from_value::<GetPromptParams>(params).is_err());
        let params = json!({ "name": "p", "arguments": { "n": "3" } });
        let parsed: GetPromptParams = serde_json::from_value(params).unwrap();
        assert_eq!(parsed.arguments.unwrap()["n"], "3");
    }
}
