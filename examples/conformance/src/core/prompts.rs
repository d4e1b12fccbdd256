//! The prompts the `prompts-*` scenarios get, the prompt that asks for input first
//! (`input-required-result-non-tool-request`), and the completions `completion-complete` asks
//! for:
//!
//! | prompt | arguments | expands to |
//! | --- | --- | --- |
//! | `test_simple_prompt` | none | one user text message |
//! | `test_prompt_with_arguments` | `arg1`, `arg2` (required) | a text naming both values |
//! | `test_prompt_with_embedded_resource` | `resourceUri` (required) | that resource embedded, then a text |
//! | `test_prompt_with_image` | none | a 1x1 red PNG, then a text |
//! | `test_input_required_result_prompt` | none | asks `user_context` (elicitation), then a text using it |
//!
//! Completion suggests, by prefix, values for `arg1` and `arg2` of
//! `test_prompt_with_arguments` and for `id` of `test://template/{id}/data`; nothing else.

use durable_mcp::CompletionCall;
use durable_mcp::wire::{
    Completion, CompletionReference, Content, ErrorObject, GetPromptResult, InputRequiredResult,
    Prompt, PromptArgument, PromptMessage,
};
use durable_mcp::{McpServer, PromptCall, PromptOutcome};

use super::content::{embedded, image};
use super::input::elicited_string;
use crate::schema::ask_string;

const WITH_ARGUMENTS: &str = "test_prompt_with_arguments";

/// Adds the prompt fixtures and the completion handler to `server`.
pub fn add(server: McpServer) -> McpServer {
    server
        .prompt(
            Prompt::new("test_simple_prompt").description("A fixed prompt without arguments."),
            |_| {
                expanded(GetPromptResult::user_text(
                    "This is a simple prompt for testing.",
                ))
            },
        )
        .prompt(
            Prompt::new(WITH_ARGUMENTS)
                .description("A prompt that names the two values it is given.")
                .argument(argument("arg1", "First test argument"))
                .argument(argument("arg2", "Second test argument")),
            |call: PromptCall| {
                let (arg1, arg2) = (&call.arguments["arg1"], &call.arguments["arg2"]);
                expanded(GetPromptResult::user_text(format!(
                    "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
                )))
            },
        )
        .prompt(
            Prompt::new("test_prompt_with_embedded_resource")
                .description("Embeds the resource it is given, then asks to process it.")
                .argument(argument("resourceUri", "URI of the resource to embed")),
            |call: PromptCall| {
                let uri = &call.arguments["resourceUri"];
                let resource =
                    embedded(uri, "text/plain", "Embedded resource content for testing.");
                expanded(GetPromptResult::new(vec![
                    PromptMessage::user(resource),
                    PromptMessage::user(Content::text(
                        "Please process the embedded resource above.",
                    )),
                ]))
            },
        )
        .prompt(
            Prompt::new("test_prompt_with_image")
                .description("Shows a 1x1 red PNG and asks to analyse it."),
            |_| {
                expanded(GetPromptResult::new(vec![
                    PromptMessage::user(image()),
                    PromptMessage::user(Content::text("Please analyze the image above.")),
                ]))
            },
        )
        .prompt(
            Prompt::new("test_input_required_result_prompt")
                .description("Asks the user for context first, then writes a prompt with it."),
            |call: PromptCall| async move { ask_context(&call) },
        )
        .completion(|call: CompletionCall| async move { Ok(complete(&call)) })
}

fn argument(name: &str, description: &str) -> PromptArgument {
    PromptArgument::new(name)
        .description(description)
        .required()
}

/// A prompt handler's result, ready at once.
fn expanded(result: GetPromptResult) -> std::future::Ready<Result<PromptOutcome, ErrorObject>> {
    std::future::ready(Ok(result.into()))
}

/// Asks for `user_context` by elicitation until the retried request answers it.
fn ask_context(call: &PromptCall) -> Result<PromptOutcome, ErrorObject> {
    let text = match elicited_string(call, "user_context", "context") {
        Some(Some(context)) => format!("Write with this context in mind: {context}"),
        Some(None) => "Write without any particular context.".to_owned(),
        None => {
            let question = ask_string("What context should the prompt use?", "context");
            return Ok(InputRequiredResult::default()
                .elicit("user_context", question)
                .into());
        }
    };
    Ok(GetPromptResult::user_text(text).into())
}

/// The values offered for the argument being completed that start with what was typed.
fn complete(call: &CompletionCall) -> Completion {
    let candidates: &[&str] = match (&call.reference, call.argument.name.as_str()) {
        (CompletionReference::Prompt { name, .. }, "arg1" | "arg2") if name == WITH_ARGUMENTS => {
            &["paris", "park", "party", "test", "testing", "tested"]
        }
        (CompletionReference::Resource { uri }, "id") if uri.starts_with("test://template/") => {
            &["1", "2", "3", "42"]
        }
        _ => &[],
    };
    Completion::matching(candidates, &call.argument.value)
}
