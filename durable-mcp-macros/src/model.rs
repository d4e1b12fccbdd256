//! The validated form of an annotated fn: every option checked (with an error on the
//! offending span) and resolved to the value the expansion emits. `expand` reads only this.

use darling::util::SpannedValue;
use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{FnArg, GenericArgument, ItemFn, Pat, PathArguments, ReturnType, Type};

use crate::args::{AnnotationArgs, RetryArgs, StepArgs, TaskArgs};
use crate::duration::parse_millis;

/// A duration in whole milliseconds, validated.
pub type Millis = u64;

/// A checked retry policy; `None` fields keep the runtime's defaults.
#[derive(Debug, Default)]
pub struct Retry {
    pub limit: Option<u32>,
    pub delay: Option<Millis>,
    pub backoff: Option<Backoff>,
    pub max_delay: Option<Millis>,
    pub jitter: Option<bool>,
}

/// The backoff variants, by name.
#[derive(Clone, Copy, Debug)]
pub enum Backoff {
    Constant,
    Linear,
    Exponential,
}

impl Backoff {
    pub fn variant(self) -> &'static str {
        match self {
            Backoff::Constant => "Constant",
            Backoff::Linear => "Linear",
            Backoff::Exponential => "Exponential",
        }
    }
}

/// Retention.
#[derive(Debug)]
pub enum Ttl {
    For(Millis),
    Forever,
}

/// A `#[mcp_task]` fn, checked.
pub struct Task {
    pub krate: syn::Path,
    pub item: ItemFn,
    pub tool_name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub ttl: Option<Ttl>,
    pub poll_interval: Option<Millis>,
    pub retry: Option<Retry>,
    pub step_timeout: Option<Millis>,
    pub cleanup_timeout: Option<Millis>,
    pub required: bool,
    pub annotations: Vec<(&'static str, bool)>,
    pub scopes: Vec<String>,
    /// Whether the fn takes the context first.
    pub takes_context: bool,
    /// The input type, as written.
    pub input: Type,
    /// `R` of the fn's `Result<R, E>`, as written.
    pub output: Type,
    /// Where the fn's return type is written (type errors of `R` and `E` are reported there).
    pub result_span: Span,
}

/// A `#[step]` fn, checked.
pub struct Step {
    pub krate: syn::Path,
    pub item: ItemFn,
    pub step_name: String,
    pub retry: Option<Retry>,
    pub timeout: Option<Millis>,
    /// `T` of the fn's `Result<T, StepError>`, as written: the value the journal stores.
    pub output: Type,
    /// Where the fn's return type is written (type errors of `T` and `E` are reported there).
    pub result_span: Span,
}

/// Collects every mistake of one attribute before reporting them together.
#[derive(Default)]
pub struct Errors(Option<syn::Error>);

impl Errors {
    pub fn push(&mut self, span: Span, message: impl std::fmt::Display) {
        let error = syn::Error::new(span, message);
        match &mut self.0 {
            Some(errors) => errors.combine(error),
            None => self.0 = Some(error),
        }
    }

    pub fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}

pub fn default_crate() -> syn::Path {
    syn::parse_quote!(::durable_mcp)
}

fn duration(errors: &mut Errors, option: &str, value: &SpannedValue<String>) -> Option<Millis> {
    match parse_millis(value.trim()) {
        Ok(millis) => Some(millis),
        Err(error) => {
            errors.push(value.span(), format!("`{option}`: {error}"));
            None
        }
    }
}

fn positive(errors: &mut Errors, option: &str, value: &SpannedValue<String>) -> Option<Millis> {
    let millis = duration(errors, option, value)?;
    if millis == 0 {
        errors.push(value.span(), format!("`{option}` must be longer than 0ms"));
        return None;
    }
    Some(millis)
}

fn retry(errors: &mut Errors, args: &RetryArgs) -> Retry {
    let limit = args.limit.as_ref().and_then(|limit| {
        if **limit == 0 {
            errors.push(
                limit.span(),
                "`retry(limit = ..)` counts attempts, the first included: it is at least 1 \
                 (`limit = 1` never retries)",
            );
            None
        } else {
            Some(**limit)
        }
    });
    let backoff = args.backoff.as_ref().and_then(|name| match name.as_str() {
        "constant" => Some(Backoff::Constant),
        "linear" => Some(Backoff::Linear),
        "exponential" => Some(Backoff::Exponential),
        other => {
            errors.push(
                name.span(),
                format!(
                    "unknown backoff {other:?}; write \"constant\", \"linear\" or \
                         \"exponential\""
                ),
            );
            None
        }
    });
    let delay = args
        .delay
        .as_ref()
        .and_then(|d| duration(errors, "delay", d));
    let max_delay = args
        .max_delay
        .as_ref()
        .and_then(|d| duration(errors, "max_delay", d));
    if let (Some(delay), Some(max), Some(span)) = (delay, max_delay, args.max_delay.as_ref())
        && max < delay
    {
        errors.push(span.span(), "`max_delay` is shorter than `delay`");
    }
    Retry {
        limit,
        delay,
        backoff,
        max_delay,
        jitter: args.jitter,
    }
}

/// The `scopes = [..]` option: each an OAuth scope token (RFC 6749 §3.3: printable ASCII
/// without spaces, `"` or `\`), once.
pub fn scopes(errors: &mut Errors, scopes: Option<&[syn::LitStr]>) -> Vec<String> {
    let mut checked: Vec<String> = Vec::new();
    for literal in scopes.unwrap_or_default() {
        let scope = literal.value();
        let valid = !scope.is_empty()
            && scope
                .bytes()
                .all(|byte| byte.is_ascii_graphic() && byte != b'"' && byte != b'\\');
        if !valid {
            errors.push(
                literal.span(),
                format!(
                    "`scopes`: {scope:?} is not an OAuth scope (printable ASCII without spaces, \
                     quotes or backslashes, as in `scopes = [\"reports:write\"]`)"
                ),
            );
        } else if checked.contains(&scope) {
            errors.push(
                literal.span(),
                format!("`scopes`: {scope:?} is listed twice"),
            );
        } else {
            checked.push(scope);
        }
    }
    checked
}

pub fn annotations(args: Option<&AnnotationArgs>) -> Vec<(&'static str, bool)> {
    let Some(args) = args else {
        return Vec::new();
    };
    [
        ("readOnlyHint", args.read_only),
        ("destructiveHint", args.destructive),
        ("idempotentHint", args.idempotent),
        ("openWorldHint", args.open_world),
    ]
    .into_iter()
    .filter_map(|(hint, value)| value.map(|value| (hint, value)))
    .collect()
}

/// The fn's doc comment, one paragraph per blank line, or `None`.
pub fn doc_comment(item: &ItemFn) -> Option<String> {
    let lines: Vec<String> = item
        .attrs
        .iter()
        .filter(|attr| attr.path().is_ident("doc"))
        .filter_map(|attr| match &attr.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(text),
                    ..
                }) => Some(text.value()),
                _ => None,
            },
            _ => None,
        })
        .map(|line| {
            line.strip_prefix(' ')
                .unwrap_or(&line)
                .trim_end()
                .to_owned()
        })
        .collect();
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// The fn's parameters but `self`.
pub fn typed_params(item: &ItemFn) -> Vec<&syn::PatType> {
    item.sig
        .inputs
        .iter()
        .filter_map(|arg| match arg {
            FnArg::Typed(typed) => Some(typed),
            FnArg::Receiver(_) => None,
        })
        .collect()
}

/// The shape checks the macros share: an async free fn, not generic, no receiver.
pub fn check_signature(errors: &mut Errors, item: &ItemFn, what: &str, expected: &str) {
    let signature = &item.sig;
    if signature.asyncness.is_none() {
        errors.push(
            signature.fn_token.span(),
            format!("{what} needs an `async fn`: write `{expected}`"),
        );
    }
    if !signature.generics.params.is_empty() {
        errors.push(
            signature.generics.span(),
            format!("{what} fns cannot be generic; use concrete types"),
        );
    }
    if let Some(FnArg::Receiver(receiver)) = signature.inputs.first() {
        errors.push(
            receiver.span(),
            format!("{what} goes on a free fn, not a method: move it out of the impl block"),
        );
    }
}

impl Task {
    pub fn new(args: TaskArgs, item: ItemFn) -> syn::Result<Self> {
        let mut errors = Errors::default();
        const SHAPE: &str = "async fn name(cx: &TaskContext, input: Input) -> Result<R, E>";
        check_signature(&mut errors, &item, "#[mcp_task]", SHAPE);
        let (takes_context, input) = match typed_params(&item).as_slice() {
            [input] => (false, Some((*input.ty).clone())),
            [context, input] => {
                if !matches!(*context.ty, Type::Reference(_)) {
                    errors.push(
                        context.ty.span(),
                        format!("the first parameter is the task's context: `cx: &TaskContext` ({SHAPE})"),
                    );
                }
                (true, Some((*input.ty).clone()))
            }
            _ => {
                errors.push(
                    item.sig.inputs.span(),
                    format!(
                        "#[mcp_task] takes the input, optionally after the context: `{SHAPE}` \
                         or `async fn name(input: Input) -> Result<R, E>`"
                    ),
                );
                (false, None)
            }
        };
        let shape = format!("a #[mcp_task] fn returns a Result: `{SHAPE}`");
        match &item.sig.output {
            ReturnType::Type(_, ty) if result_types(ty).is_some() => {}
            ReturnType::Type(_, ty) => errors.push(ty.span(), shape),
            ReturnType::Default => errors.push(item.sig.ident.span(), shape),
        }
        if args.optional.is_present() && args.required.is_present() {
            errors.push(
                args.optional.span(),
                "a task is either `optional` (the default) or `required`, not both",
            );
        }
        let ttl = args.ttl.as_ref().and_then(|ttl| {
            if ttl.trim() == "forever" {
                Some(Ttl::Forever)
            } else {
                positive(&mut errors, "ttl", ttl).map(Ttl::For)
            }
        });
        let poll_interval = args
            .poll_interval
            .as_ref()
            .and_then(|interval| positive(&mut errors, "poll_interval", interval));
        let step_timeout = args
            .step_timeout
            .as_ref()
            .and_then(|timeout| positive(&mut errors, "step_timeout", timeout));
        let cleanup_timeout = args
            .cleanup_timeout
            .as_ref()
            .and_then(|timeout| positive(&mut errors, "cleanup_timeout", timeout));
        let retry = args.retry.as_ref().map(|r| retry(&mut errors, &r.0));
        let tool_name = name(&mut errors, args.name.as_ref(), &item);
        let scopes = scopes(&mut errors, args.scopes.as_deref());
        errors.finish()?;
        Ok(Task {
            krate: args.krate.unwrap_or_else(default_crate),
            tool_name,
            title: args.title,
            description: args.description.or_else(|| doc_comment(&item)),
            ttl,
            poll_interval,
            retry,
            step_timeout,
            cleanup_timeout,
            required: args.required.is_present(),
            annotations: annotations(args.annotations.as_ref()),
            scopes,
            takes_context,
            input: input.expect("an input when there are no errors"),
            output: task_output(&item).expect("a Result when there are no errors"),
            result_span: result_span(&item),
            item,
        })
    }
}

/// `R` of a task fn's `Result<R, E>`.
fn task_output(item: &ItemFn) -> Option<Type> {
    match &item.sig.output {
        ReturnType::Type(_, ty) => result_types(ty).map(|(value, _)| value),
        ReturnType::Default => None,
    }
}

/// The `name` option, checked, or the fn's name.
pub fn name(errors: &mut Errors, option: Option<&SpannedValue<String>>, item: &ItemFn) -> String {
    match option {
        Some(name) => {
            check_name(errors, name);
            name.as_str().to_owned()
        }
        None => item.sig.ident.to_string(),
    }
}

fn check_name(errors: &mut Errors, name: &SpannedValue<String>) {
    if name.is_empty() {
        errors.push(name.span(), "`name` must not be empty");
    } else if name.contains('#') {
        errors.push(
            name.span(),
            "`name` must not contain '#', which marks repeated occurrences in the journal",
        );
    }
}

impl Step {
    pub fn new(args: StepArgs, item: ItemFn) -> syn::Result<Self> {
        let mut errors = Errors::default();
        const SHAPE: &str = "async fn name(..) -> Result<T, StepError>";
        check_signature(&mut errors, &item, "#[step]", SHAPE);
        for arg in &item.sig.inputs {
            if let FnArg::Typed(typed) = arg
                && !matches!(*typed.pat, Pat::Ident(_))
            {
                errors.push(
                    typed.pat.span(),
                    "#[step] parameters are plain names (`to: &str`), not patterns",
                );
            }
        }
        let result = match &item.sig.output {
            ReturnType::Type(_, ty) => result_types(ty),
            ReturnType::Default => None,
        };
        if result.is_none() {
            errors.push(
                match &item.sig.output {
                    ReturnType::Type(_, ty) => ty.span(),
                    ReturnType::Default => item.sig.ident.span(),
                },
                format!("a #[step] fn returns `Result<T, StepError>`: `{SHAPE}`"),
            );
        }
        let timeout = args
            .timeout
            .as_ref()
            .and_then(|timeout| positive(&mut errors, "timeout", timeout));
        let retry = args.retry.as_ref().map(|r| retry(&mut errors, &r.0));
        let step_name = name(&mut errors, args.name.as_ref(), &item);
        errors.finish()?;
        Ok(Step {
            krate: args.krate.unwrap_or_else(default_crate),
            step_name,
            retry,
            timeout,
            output: result.expect("a Result when there are no errors").0,
            result_span: result_span(&item),
            item,
        })
    }
}

/// Where `item`'s return type is written (its first token on stable).
pub fn result_span(item: &ItemFn) -> Span {
    match &item.sig.output {
        ReturnType::Type(_, ty) => ty.span(),
        ReturnType::Default => item.sig.ident.span(),
    }
}

/// `T` and `E` of a type written `Result<T, E>` (any path ending in `Result`).
pub fn result_types(ty: &Type) -> Option<(Type, Type)> {
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    if last.ident != "Result" {
        return None;
    }
    let PathArguments::AngleBracketed(arguments) = &last.arguments else {
        return None;
    };
    let mut types = arguments.args.iter().filter_map(|arg| match arg {
        GenericArgument::Type(ty) => Some(ty.clone()),
        _ => None,
    });
    Some((types.next()?, types.next()?))
}
