//! Plain tools that need input before they can answer (SEP-2322, `input-required-result-*`):
//! each answers `input_required` until the retried call carries well-formed answers, then
//! completes. A missing, unrecognised or malformed answer is asked for again; extra answers
//! are ignored.
//!
//! | tool | asks for | `requestState` |
//! | --- | --- | --- |
//! | `test_input_required_result_elicitation` | `user_name` (elicitation) | none |
//! | `test_input_required_result_sampling` | `capital_question` (sampling) | none |
//! | `test_input_required_result_list_roots` | `client_roots` (roots) | none |
//! | `test_input_required_result_request_state` | `confirm` (elicitation) | sealed, checked |
//! | `test_input_required_result_tampered_state` | `confirm` (elicitation) | sealed, checked |
//! | `test_input_required_result_multiple_inputs` | all three kinds at once | sealed, checked |
//! | `test_input_required_result_multi_round` | `step1`, then `step2` | sealed, changes per round |
//! | `test_input_required_result_capabilities` | only what the client declared it supports | none |

use durable_mcp::PlainTool;
use durable_mcp::wire::{CallToolResult, ErrorObject, InputRequiredResult, code};
use durable_mcp::{McpServer, ToolCall, ToolOutcome, tool};
use serde_json::Value;

use super::input::{
    Elicited, elicited, elicited_string, list_roots, listed_roots, sample, sampled_text,
};
use super::no_arguments;
use super::sealed_state::{open, seal};
use crate::schema::{ask_boolean, ask_string};

const REQUEST_STATE: &str = "test_input_required_result_request_state";
const TAMPERED_STATE: &str = "test_input_required_result_tampered_state";
const MULTIPLE_INPUTS: &str = "test_input_required_result_multiple_inputs";
const MULTI_ROUND: &str = "test_input_required_result_multi_round";

/// Adds the input-required fixtures to `server`.
pub fn add(server: McpServer) -> McpServer {
    server
        .tool(test_input_required_result_elicitation)
        .tool(PlainTool::new(
            no_arguments(
                "test_input_required_result_sampling",
                "Asks the client's model a question, then reports its answer.",
            ),
            ask_model,
        ))
        .tool(PlainTool::new(
            no_arguments(
                "test_input_required_result_list_roots",
                "Asks for the client's roots, then lists them.",
            ),
            ask_roots,
        ))
        .tool(PlainTool::new(
            no_arguments(
                REQUEST_STATE,
                "Asks for confirmation, carrying signed state between rounds.",
            ),
            |call| confirm_with_state(REQUEST_STATE, call),
        ))
        .tool(PlainTool::new(
            no_arguments(
                TAMPERED_STATE,
                "Asks for confirmation; refuses state it did not sign.",
            ),
            |call| confirm_with_state(TAMPERED_STATE, call),
        ))
        .tool(PlainTool::new(
            no_arguments(
                MULTIPLE_INPUTS,
                "Asks for a name, a generated greeting and the roots at once.",
            ),
            ask_everything,
        ))
        .tool(PlainTool::new(
            no_arguments(
                MULTI_ROUND,
                "Asks a name, then a favorite color, one round each.",
            ),
            ask_in_two_rounds,
        ))
        .tool(PlainTool::new(
            no_arguments(
                "test_input_required_result_capabilities",
                "Asks for input only in a way the client declared it supports.",
            ),
            ask_within_capabilities,
        ))
}

/// Asks for a name by elicitation if the client declared it, else by sampling, else by its
/// roots; refuses with -32021 when the client declared none of them.
async fn ask_within_capabilities(call: ToolCall) -> Result<ToolOutcome, ErrorObject> {
    let declared = |name: &str| call.client_capabilities.other.contains_key(name);
    if let Some(name) = elicited_string(&call, "user_name", "name") {
        return done(format!("Hello, {}!", name.unwrap_or_default()));
    }
    if let Some(text) = sampled_text(&call, "name_suggestion") {
        return done(format!("The model suggests: {text}"));
    }
    if let Some(roots) = listed_roots(&call, "client_roots") {
        return done(format!("{} root(s)", roots.len()));
    }
    if declared("elicitation") {
        Ok(InputRequiredResult::default()
            .elicit("user_name", ask_string("What is your name?", "name"))
            .into())
    } else if declared("sampling") {
        Ok(ask("name_suggestion", sample("Suggest a name", 20)).into())
    } else if declared("roots") {
        Ok(ask("client_roots", list_roots()).into())
    } else {
        Err(ErrorObject::new(
            code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            "Missing required client capability: declare elicitation, sampling or roots",
        )
        .with_data(serde_json::json!({ "requiredCapabilities": { "elicitation": {} } })))
    }
}

/// An `input_required` answer asking for the single input `request` under `key`.
fn ask(key: &str, request: Value) -> InputRequiredResult {
    InputRequiredResult::default().input_request(key, request)
}

fn done(text: String) -> Result<ToolOutcome, ErrorObject> {
    Ok(CallToolResult::text(text).into())
}

/// Asks the user's name, then greets them.
#[tool]
async fn test_input_required_result_elicitation(call: &ToolCall) -> ToolOutcome {
    greet_by_name(call)
}

/// Greets the user by the name they give, once they have given it; also serves
/// `test_streaming_elicitation`.
pub fn greet_by_name(call: &ToolCall) -> ToolOutcome {
    match elicited_string(call, "user_name", "name") {
        Some(Some(name)) => CallToolResult::text(format!("Hello, {name}!")).into(),
        Some(None) => CallToolResult::text("Hello, whoever you are!").into(),
        None => InputRequiredResult::default()
            .elicit("user_name", ask_string("What is your name?", "name"))
            .into(),
    }
}

async fn ask_model(call: ToolCall) -> Result<ToolOutcome, ErrorObject> {
    match sampled_text(&call, "capital_question") {
        Some(text) => done(format!("The model answered: {text}")),
        None => Ok(ask(
            "capital_question",
            sample("What is the capital of France?", 100),
        )
        .into()),
    }
}

async fn ask_roots(call: ToolCall) -> Result<ToolOutcome, ErrorObject> {
    match listed_roots(&call, "client_roots") {
        Some(roots) => done(format!(
            "The client has {} root(s): {}",
            roots.len(),
            roots.join(", ")
        )),
        None => Ok(ask("client_roots", list_roots()).into()),
    }
}

/// Asks for a confirmation under a sealed state and completes only with that state intact:
/// `state-ok` in the answer says the echoed state was verified.
async fn confirm_with_state(
    tool: &'static str,
    call: ToolCall,
) -> Result<ToolOutcome, ErrorObject> {
    const ROUND: &str = "awaiting-confirmation";
    let state = seal(tool, ROUND);
    let question = InputRequiredResult::default()
        .elicit("confirm", ask_boolean("Please confirm", "ok"))
        .state(state);
    let Some(echoed) = &call.request_state else {
        return Ok(question.into());
    };
    if open(tool, echoed)? != ROUND {
        return Err(unexpected_state());
    }
    match elicited(&call, "confirm") {
        Some(Elicited::Accepted(content)) if content.get("ok").is_some_and(Value::is_boolean) => {
            done(format!("state-ok: confirmed={}", content["ok"]))
        }
        Some(Elicited::Refused) => done("state-ok: not confirmed".to_owned()),
        _ => Ok(question.into()),
    }
}

/// Asks for one input of each kind together and completes once all three are answered,
/// asking again for just the ones still missing.
async fn ask_everything(call: ToolCall) -> Result<ToolOutcome, ErrorObject> {
    const ROUND: &str = "awaiting-all-three";
    if let Some(echoed) = &call.request_state
        && open(MULTIPLE_INPUTS, echoed)? != ROUND
    {
        return Err(unexpected_state());
    }
    let name = elicited_string(&call, "user_name", "name");
    let greeting = sampled_text(&call, "greeting");
    let roots = listed_roots(&call, "client_roots");
    if let (Some(name), Some(greeting), Some(roots)) = (&name, &greeting, &roots) {
        let name = name.as_deref().unwrap_or("someone anonymous");
        return done(format!("{greeting} {name}, with {} root(s)", roots.len()));
    }
    let mut missing = InputRequiredResult::default().state(seal(MULTIPLE_INPUTS, ROUND));
    if name.is_none() {
        missing = missing.elicit("user_name", ask_string("What is your name?", "name"));
    }
    if greeting.is_none() {
        missing
            .input_requests
            .insert("greeting".to_owned(), sample("Generate a greeting", 50));
    }
    if roots.is_none() {
        missing
            .input_requests
            .insert("client_roots".to_owned(), list_roots());
    }
    Ok(missing.into())
}

/// Round one asks a name; round two, whose sealed state carries that name, asks a color;
/// round three answers with both. Each round's state differs from the last.
async fn ask_in_two_rounds(call: ToolCall) -> Result<ToolOutcome, ErrorObject> {
    let ask_step1 = || {
        InputRequiredResult::default()
            .elicit("step1", ask_string("Step 1: What is your name?", "name"))
            .state(seal(MULTI_ROUND, "step1"))
    };
    let ask_step2 = |name: &str| {
        InputRequiredResult::default()
            .elicit(
                "step2",
                ask_string("Step 2: What is your favorite color?", "color"),
            )
            .state(seal(MULTI_ROUND, &format!("step2:{name}")))
    };
    let Some(echoed) = &call.request_state else {
        return Ok(ask_step1().into());
    };
    let round = open(MULTI_ROUND, echoed)?;
    if round == "step1" {
        return match elicited_string(&call, "step1", "name") {
            Some(Some(name)) => Ok(ask_step2(&name).into()),
            Some(None) => done("You preferred not to say your name.".to_owned()),
            None => Ok(ask_step1().into()),
        };
    }
    let Some(name) = round.strip_prefix("step2:") else {
        return Err(unexpected_state());
    };
    match elicited_string(&call, "step2", "color") {
        Some(Some(color)) => done(format!("{name}'s favorite color is {color}.")),
        Some(None) => done(format!("{name} kept their favorite color secret.")),
        None => Ok(ask_step2(name).into()),
    }
}

/// A state this server signed but for a round the tool does not have (it cannot happen
/// unless the server changed between rounds).
fn unexpected_state() -> ErrorObject {
    ErrorObject::new(
        code::INVALID_PARAMS,
        "Invalid params: requestState names a round this tool does not have; call again without it",
    )
}
