//! The attribute arguments as written, parsed declaratively with darling. Nothing here is
//! validated beyond its Rust type: `model` turns these into checked values.

use darling::FromMeta;
use darling::ast::NestedMeta;
use darling::util::SpannedValue;
use proc_macro2::Span;
use quote::ToTokens;
use syn::spanned::Spanned;

/// A bare word (`required`, `optional`), as darling's `Flag` reads it, but refusing a word
/// with a value (`required()`, `optional = true`) with an error: `Flag` panics on an empty
/// list (darling 0.23 unwraps the error of `()`, which accepts one).
#[derive(Clone, Copy, Debug, Default)]
pub struct Word(Option<Span>);

impl Word {
    /// Whether the word was written.
    pub fn is_present(&self) -> bool {
        self.0.is_some()
    }

    /// Where the word was written, or the call site.
    pub fn span(&self) -> Span {
        self.0.unwrap_or_else(Span::call_site)
    }
}

impl FromMeta for Word {
    fn from_none() -> Option<Self> {
        Some(Word(None))
    }

    fn from_meta(meta: &syn::Meta) -> darling::Result<Self> {
        match meta {
            syn::Meta::Path(path) => Ok(Word(Some(path.span()))),
            other => Err(darling::Error::custom(
                "this option takes no value: write the word alone, as in `#[mcp_task(optional)]`",
            )
            .with_span(other)),
        }
    }
}

/// `#[mcp_task(...)]`.
#[derive(Debug, Default, FromMeta)]
pub struct TaskArgs {
    /// The tool name (default: the fn name).
    pub name: Option<SpannedValue<String>>,
    /// The display title.
    pub title: Option<String>,
    /// The description (default: the doc comment).
    pub description: Option<String>,
    /// Retention: a duration, or `"forever"`.
    pub ttl: Option<SpannedValue<String>>,
    /// The suggested poll interval.
    pub poll_interval: Option<SpannedValue<String>>,
    /// The default retry policy of the task's steps.
    pub retry: Option<RetryOption>,
    /// The default per-attempt timeout of the task's steps.
    pub step_timeout: Option<SpannedValue<String>>,
    /// How long the compensations may take after a cancel.
    pub cleanup_timeout: Option<SpannedValue<String>>,
    /// Clients without the Tasks extension get -32021.
    pub required: Word,
    /// Clients without the Tasks extension may call it; it then runs inline (the default).
    pub optional: Word,
    /// Tool annotations.
    pub annotations: Option<AnnotationArgs>,
    /// The OAuth scopes a call and the task's `tasks/*` requests need.
    pub scopes: Option<Vec<syn::LitStr>>,
    /// The path of the durable-mcp crate (default `::durable_mcp`).
    #[darling(rename = "crate")]
    pub krate: Option<syn::Path>,
}

/// `#[tool(...)]`.
#[derive(Debug, Default, FromMeta)]
pub struct ToolArgs {
    /// The tool name (default: the fn name).
    pub name: Option<SpannedValue<String>>,
    /// The display title.
    pub title: Option<String>,
    /// The description (default: the doc comment).
    pub description: Option<String>,
    /// Tool annotations.
    pub annotations: Option<AnnotationArgs>,
    /// The OAuth scopes a call needs.
    pub scopes: Option<Vec<syn::LitStr>>,
    /// The path of the durable-mcp crate (default `::durable_mcp`).
    #[darling(rename = "crate")]
    pub krate: Option<syn::Path>,
}

/// `#[step(...)]`.
#[derive(Debug, Default, FromMeta)]
pub struct StepArgs {
    /// The journal name (default: the fn name).
    pub name: Option<SpannedValue<String>>,
    /// The step's retry policy.
    pub retry: Option<RetryOption>,
    /// The per-attempt timeout.
    pub timeout: Option<SpannedValue<String>>,
    /// The path of the durable-mcp crate (default `::durable_mcp`).
    #[darling(rename = "crate")]
    pub krate: Option<syn::Path>,
}

/// The `retry` option, which only takes the list form: darling alone would answer
/// `retry = 3` with "Unexpected type `int`", which does not say what to write.
#[derive(Debug)]
pub struct RetryOption(pub RetryArgs);

/// The fields of `retry(..)`, listed in its errors.
const RETRY_FIELDS: &str = "limit, delay, backoff, max_delay, jitter";

/// What the errors of `retry` suggest (`retry = N` suggests `limit = N`).
const RETRY_EXAMPLE: &str = "limit = 5, delay = \"1s\"";

impl FromMeta for RetryOption {
    fn from_meta(meta: &syn::Meta) -> darling::Result<Self> {
        match meta {
            syn::Meta::List(list) => {
                let nested = NestedMeta::parse_meta_list(list.tokens.clone())?;
                // `retry(3)`: darling would say "Unexpected literal type".
                if let Some(literal) = nested.iter().find_map(|item| match item {
                    NestedMeta::Lit(literal) => Some(literal),
                    NestedMeta::Meta(_) => None,
                }) {
                    return Err(refuse(literal, Some(literal), "takes named fields"));
                }
                RetryArgs::from_list(&nested).map(RetryOption)
            }
            syn::Meta::NameValue(name_value) => match &name_value.value {
                syn::Expr::Lit(literal) => Err(refuse(literal, Some(&literal.lit), "takes a list")),
                other => Err(refuse(other, None, "takes a list")),
            },
            syn::Meta::Path(path) => Err(refuse(path, None, "takes a list")),
        }
    }
}

/// The error for a malformed `retry`, at `at`, with the list to write instead: `retry = 3`
/// (or `retry(3)`) most likely means `retry(limit = 3)`.
fn refuse(at: &impl Spanned, written: Option<&syn::Lit>, problem: &str) -> darling::Error {
    let note = match written {
        Some(syn::Lit::Int(_)) => " (`limit` counts attempts, the first included)",
        _ => "",
    };
    darling::Error::custom(format!(
        "`retry` {problem}: write {}{note}; its fields are {RETRY_FIELDS}",
        retry_suggestion(written)
    ))
    .with_span(at)
}

/// The `retry(..)` to suggest for a mistaken one whose value is `written`: a count is the
/// `limit`, anything else gets the example.
fn retry_suggestion(written: Option<&syn::Lit>) -> String {
    match written {
        Some(syn::Lit::Int(int)) => format!("`retry(limit = {})`", int.base10_digits()),
        _ => format!("`retry({RETRY_EXAMPLE})`"),
    }
}

/// What to write instead of the old spelling `retries`, as written in `meta`: its list of
/// named fields under the new name, or what an error of `retry` would suggest.
pub fn retry_for_retries(meta: &syn::Meta) -> String {
    let literal = |expr: &syn::Expr| match expr {
        syn::Expr::Lit(literal) => Some(literal.lit.clone()),
        _ => None,
    };
    let written = match meta {
        syn::Meta::List(list) => match NestedMeta::parse_meta_list(list.tokens.clone()) {
            Ok(nested) if !nested.is_empty() => {
                let fields: Option<Vec<String>> = nested
                    .iter()
                    .map(|item| match item {
                        NestedMeta::Meta(syn::Meta::NameValue(field)) => Some(format!(
                            "{} = {}",
                            field.path.to_token_stream(),
                            field.value.to_token_stream()
                        )),
                        NestedMeta::Meta(field) => Some(field.to_token_stream().to_string()),
                        NestedMeta::Lit(_) => None,
                    })
                    .collect();
                if let Some(fields) = fields {
                    return format!("`retry({})`", fields.join(", "));
                }
                nested.iter().find_map(|item| match item {
                    NestedMeta::Lit(literal) => Some(literal.clone()),
                    NestedMeta::Meta(_) => None,
                })
            }
            _ => None,
        },
        syn::Meta::NameValue(name_value) => literal(&name_value.value),
        syn::Meta::Path(_) => None,
    };
    retry_suggestion(written.as_ref())
}

/// What to write instead of the old spelling `timeout` of `#[mcp_task]`: `step_timeout` with
/// the duration as written, if it is a string.
pub fn step_timeout_for_timeout(meta: &syn::Meta) -> String {
    let duration = match meta {
        syn::Meta::NameValue(syn::MetaNameValue {
            value:
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(duration),
                    ..
                }),
            ..
        }) => duration.value(),
        _ => "30s".to_owned(),
    };
    format!("`step_timeout = {duration:?}`")
}

/// `retry(limit = 5, delay = "1s", backoff = "exponential", max_delay = "5m", jitter = true)`.
#[derive(Debug, Default, FromMeta)]
pub struct RetryArgs {
    /// Attempts in all, the first included.
    pub limit: Option<SpannedValue<u32>>,
    /// The base delay.
    pub delay: Option<SpannedValue<String>>,
    /// `"constant"`, `"linear"` or `"exponential"`.
    pub backoff: Option<SpannedValue<String>>,
    /// The longest delay.
    pub max_delay: Option<SpannedValue<String>>,
    /// Whether delays are spread.
    pub jitter: Option<bool>,
}

/// `annotations(read_only, destructive, idempotent, open_world)`: hints for clients.
#[derive(Debug, Default, FromMeta)]
pub struct AnnotationArgs {
    /// `readOnlyHint`.
    pub read_only: Option<bool>,
    /// `destructiveHint`.
    pub destructive: Option<bool>,
    /// `idempotentHint`.
    pub idempotent: Option<bool>,
    /// `openWorldHint`.
    pub open_world: Option<bool>,
}
