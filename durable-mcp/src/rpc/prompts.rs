//! Prompts and argument completion as the server holds them, and the checks `prompts/get`
//! and `completion/complete` make before a handler runs.

use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::json;

use super::error::RpcError;
use super::request::{Handler, PromptCall};
use super::server::{McpServer, ResourceListing};
use crate::runtime::LocalBoxFuture;
use crate::wire::{
    ClientCapabilities, CompleteParams, Completion, CompletionArgument, CompletionReference,
    ErrorObject, GetPromptParams, GetPromptResult, Prompt,
};

/// One `completion/complete`, as the completion handler sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct CompletionCall {
    /// The prompt or resource the argument belongs to (the router has checked that it is
    /// registered).
    pub reference: CompletionReference,
    /// The argument to complete and its partial value.
    pub argument: CompletionArgument,
    /// The arguments already resolved, by name (empty when the client sent none).
    pub context: BTreeMap<String, String>,
    /// Who is asking, as the authentication hook said.
    pub principal: Option<String>,
}

impl CompletionCall {
    pub(crate) fn new(params: CompleteParams, principal: Option<String>) -> Self {
        CompletionCall {
            reference: params.reference,
            argument: params.argument,
            context: params
                .context
                .and_then(|context| context.arguments)
                .unwrap_or_default(),
            principal,
        }
    }
}

pub(crate) type PromptHandler = Handler<BTreeMap<String, String>, GetPromptResult>;

pub(crate) type CompletionHandler =
    Rc<dyn Fn(CompletionCall) -> LocalBoxFuture<'static, Result<Completion, ErrorObject>>>;

/// A registered prompt.
#[derive(Clone)]
pub(crate) struct PromptEntry {
    pub(crate) prompt: Prompt,
    pub(crate) handler: PromptHandler,
}

impl PromptEntry {
    /// The handler's view of `params`: -32602 naming every required argument they lack.
    pub(crate) fn call(
        &self,
        params: GetPromptParams,
        principal: Option<String>,
        client_capabilities: ClientCapabilities,
    ) -> Result<PromptCall, RpcError> {
        let arguments = params.arguments.unwrap_or_default();
        let missing = self.prompt.missing_arguments(&arguments);
        if !missing.is_empty() {
            let names: Vec<String> = missing.iter().map(|name| format!("{name:?}")).collect();
            let plural = if missing.len() == 1 { "" } else { "s" };
            let mut error = RpcError::invalid_params(format!(
                "Invalid params: the prompt {:?} needs the argument{plural} {}",
                self.prompt.name,
                names.join(", ")
            ));
            error.error.data = Some(json!({ "name": self.prompt.name, "missing": missing }));
            return Err(error);
        }
        Ok(PromptCall {
            arguments,
            input_responses: params.input_responses,
            request_state: params.request_state,
            principal,
            client_capabilities,
            notify: Default::default(),
        })
    }
}

impl McpServer {
    /// The prompt named `name`: -32602 if there is none.
    pub(crate) fn prompt_entry(&self, name: &str) -> Result<&PromptEntry, RpcError> {
        self.find_prompt(name).ok_or_else(|| {
            let mut error = RpcError::invalid_params(format!("Unknown prompt: {name}"));
            error.error.data = Some(json!({ "name": name }));
            error
        })
    }

    /// Checks that a completion's reference names a registered prompt, or a registered
    /// resource or template (by its URI, its URI template, or a URI it serves): -32602 if not.
    pub(crate) fn check_reference(&self, reference: &CompletionReference) -> Result<(), RpcError> {
        match reference {
            CompletionReference::Prompt { name, .. } => self.prompt_entry(name).map(|_| ()),
            CompletionReference::Resource { uri } => {
                let known = self.resources.iter().any(|entry| {
                    entry.serves(uri)
                        || matches!(&entry.listing,
                            ResourceListing::Template(template) if template.uri_template == *uri)
                });
                if known {
                    return Ok(());
                }
                let mut error = RpcError::invalid_params(format!("Resource not found: {uri}"));
                error.error.data = Some(json!({ "uri": uri }));
                Err(error)
            }
        }
    }
}
