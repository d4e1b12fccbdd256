//! Code generation from the checked model. The generated code is thin: it calls documented
//! runtime items through `<crate>::__private` by absolute path only.

use darling::FromMeta;
use darling::ast::NestedMeta;
use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, ItemFn, Pat, ReturnType, Type};

use crate::model::{Millis, Retry, Step, Task, Ttl};

/// The options `#[mcp_task]` accepts.
const TASK_OPTIONS: &[&str] = &[
    "name",
    "title",
    "description",
    "ttl",
    "poll_interval",
    "retry",
    "step_timeout",
    "cleanup_timeout",
    "required",
    "optional",
    "annotations",
    "scopes",
    "crate",
];

/// The options `#[step]` accepts.
const STEP_OPTIONS: &[&str] = &["name", "retry", "timeout", "crate"];

/// An old spelling of an option, refused with its new name (as tokio-macros refuses its
/// renamed options) rather than as an unknown option.
pub struct Renamed {
    pub old: &'static str,
    pub new: &'static str,
    /// What the option is, punctuation first, said after "`old` is renamed `new`".
    pub meaning: &'static str,
    /// What to write instead, from the option as written.
    pub example: fn(&syn::Meta) -> String,
}

impl Renamed {
    fn message(&self, written: &syn::Meta) -> String {
        format!(
            "`{}` is renamed `{}`{} (write {})",
            self.old,
            self.new,
            self.meaning,
            (self.example)(written)
        )
    }
}

/// The old spellings `#[mcp_task]` refuses.
const TASK_RENAMED: &[Renamed] = &[
    Renamed {
        old: "timeout",
        new: "step_timeout",
        meaning: ": it is the timeout of each step of the task",
        example: crate::args::step_timeout_for_timeout,
    },
    Renamed {
        old: "retries",
        new: "retry",
        meaning: ", as in `TaskDefinition::retry`: it is the retry policy of the task's steps",
        example: crate::args::retry_for_retries,
    },
];

/// The old spellings `#[step]` refuses.
const STEP_RENAMED: &[Renamed] = &[Renamed {
    old: "retries",
    new: "retry",
    meaning: ", as in `Step::retry`: it is the retry policy of this step",
    example: crate::args::retry_for_retries,
}];

/// `#[mcp_task]`: the expansion, or the errors next to a stand-in for the user's fn.
pub fn task(args: TokenStream, item: TokenStream) -> TokenStream {
    let krate = crate_path(args.clone());
    let returns = quote!(#krate::TaskTool);
    expand_task(args, item.clone()).unwrap_or_else(|errors| stand_in(item, errors, &returns))
}

/// The `crate = path` option, read leniently (as darling reads it, but alone): whatever else
/// is wrong with the arguments, the stand-in for a failed macro names its type through the
/// crate the user pointed at, which may be the only path to durable-mcp.
pub fn crate_path(args: TokenStream) -> syn::Path {
    NestedMeta::parse_meta_list(args)
        .ok()
        .into_iter()
        .flatten()
        .find_map(|meta| match meta {
            NestedMeta::Meta(syn::Meta::NameValue(option)) if option.path.is_ident("crate") => {
                syn::Path::from_expr(&option.value).ok()
            }
            _ => None,
        })
        .unwrap_or_else(crate::model::default_crate)
}

/// After a mistake, the user's fn still compiles (nested, so its own errors show) behind a fn
/// of its name that returns what the macro's fn would (`returns`), so that registering it
/// (`McpServer::task(name)`) adds no second error.
pub fn stand_in(item: TokenStream, errors: TokenStream, returns: &TokenStream) -> TokenStream {
    let Ok(mut function) = syn::parse2::<ItemFn>(item.clone()) else {
        return quote!(#item #errors);
    };
    if matches!(function.sig.inputs.first(), Some(FnArg::Receiver(_))) {
        // A method cannot be nested in a fn; it stays where it is.
        return quote!(#item #errors);
    }
    let (attrs, vis, name) = (
        std::mem::take(&mut function.attrs),
        std::mem::replace(&mut function.vis, syn::Visibility::Inherited),
        function.sig.ident.clone(),
    );
    function.attrs = vec![syn::parse_quote!(#[allow(dead_code, clippy::unused_async)])];
    function.sig.ident = format_ident!("__durable_mcp_task_body");
    quote! {
        #(#attrs)*
        #vis fn #name() -> #returns {
            #function
            ::core::unimplemented!("the attribute macro on this fn failed to compile")
        }
        #errors
    }
}

/// `#[step]`: the expansion, or the errors next to the user's item.
pub fn step(args: TokenStream, item: TokenStream) -> TokenStream {
    with_item_on_error(item.clone(), expand_step(args, item))
}

/// A failing macro still emits the user's item, so that one mistake gives one error.
fn with_item_on_error(
    item: TokenStream,
    expanded: Result<TokenStream, TokenStream>,
) -> TokenStream {
    expanded.unwrap_or_else(|errors| quote!(#item #errors))
}

/// The options of `attribute`, which accepts `valid` and refuses the old spellings `renamed`
/// with their new names, checked with `check` (their values, and the fn they are on): every
/// mistake of either is reported in one build, as long as the known options parse.
pub fn checked_options<T: FromMeta, M>(
    args: TokenStream,
    attribute: &str,
    valid: &[&str],
    renamed: &[Renamed],
    check: impl FnOnce(T) -> syn::Result<M>,
) -> Result<M, TokenStream> {
    let (options, mut errors) = parse_options(args, attribute, valid, renamed)?;
    match options.map(check) {
        Some(Ok(checked)) if errors.is_empty() => Ok(checked),
        Some(Err(invalid)) => {
            errors.extend(invalid.to_compile_error());
            Err(errors)
        }
        _ => Err(errors),
    }
}

/// The options of `attribute` that parse, if they all do, and the errors of every option that
/// does not (empty when none): unknown, renamed, or malformed.
fn parse_options<T: FromMeta>(
    args: TokenStream,
    attribute: &str,
    valid: &[&str],
    renamed: &[Renamed],
) -> Result<(Option<T>, TokenStream), TokenStream> {
    let nested = NestedMeta::parse_meta_list(args).map_err(|e| e.to_compile_error())?;
    let mut errors = crate::model::Errors::default();
    for meta in &nested {
        let NestedMeta::Meta(meta) = meta else {
            errors.push(
                meta.span(),
                format!(
                    "{attribute} takes `option = value` pairs; valid options: {}",
                    valid.join(", ")
                ),
            );
            continue;
        };
        let name = meta
            .path()
            .get_ident()
            .map(ToString::to_string)
            .or_else(|| meta.path().is_ident("crate").then(|| "crate".to_owned()))
            .unwrap_or_default();
        if let Some(renamed) = renamed.iter().find(|renamed| renamed.old == name) {
            errors.push(meta.path().span(), renamed.message(meta));
        } else if !valid.contains(&name.as_str()) {
            errors.push(
                meta.path().span(),
                format!(
                    "unknown option `{name}` of {attribute}; valid options: {}",
                    valid.join(", ")
                ),
            );
        }
    }
    // The known options are still parsed, so that one build reports every mistake.
    let known: Vec<NestedMeta> = nested
        .into_iter()
        .filter(|meta| match meta {
            NestedMeta::Meta(meta) => valid.iter().any(|option| meta.path().is_ident(option)),
            NestedMeta::Lit(_) => false,
        })
        .collect();
    let mut tokens = errors
        .finish()
        .err()
        .map(|unknown| unknown.to_compile_error())
        .unwrap_or_default();
    match T::from_list(&known) {
        Ok(options) => Ok((Some(options), tokens)),
        Err(invalid) => {
            tokens.extend(invalid.write_errors());
            Ok((None, tokens))
        }
    }
}

fn expand_task(args: TokenStream, item: TokenStream) -> Result<TokenStream, TokenStream> {
    let item: ItemFn = syn::parse2(item).map_err(|e| e.to_compile_error())?;
    let task = checked_options(args, "#[mcp_task]", TASK_OPTIONS, TASK_RENAMED, |args| {
        Task::new(args, item)
    })?;
    Ok(task_tokens(&task))
}

fn expand_step(args: TokenStream, item: TokenStream) -> Result<TokenStream, TokenStream> {
    let item: ItemFn = syn::parse2(item).map_err(|e| e.to_compile_error())?;
    let step = checked_options(args, "#[step]", STEP_OPTIONS, STEP_RENAMED, |args| {
        Step::new(args, item)
    })?;
    Ok(step_tokens(&step))
}

pub fn option<T: quote::ToTokens>(value: Option<T>) -> TokenStream {
    match value {
        Some(value) => quote!(::core::option::Option::Some(#value)),
        None => quote!(::core::option::Option::None),
    }
}

fn duration(millis: Millis) -> TokenStream {
    quote!(::core::time::Duration::from_millis(#millis))
}

fn retry(krate: &syn::Path, retry: &Retry) -> TokenStream {
    let limit = option(retry.limit);
    let delay = option(retry.delay.map(duration));
    let backoff = option(retry.backoff.map(|backoff| {
        let variant = format_ident!("{}", backoff.variant());
        quote!(#krate::__private::Backoff::#variant)
    }));
    let max_delay = option(retry.max_delay.map(duration));
    let jitter = option(retry.jitter);
    quote!(#krate::__private::retry_policy(#limit, #delay, #backoff, #max_delay, #jitter))
}

/// The user's fn, renamed and private, as the body the generated fn calls. Lint levels the
/// user set apply to the body too; every other attribute stays on the outer fn only
/// (`#[deprecated]` or `#[instrument]` apply once, to the name the user wrote). The body must
/// stay `async` even without an `.await`.
pub fn inner_body(item: &ItemFn, name: &syn::Ident) -> ItemFn {
    const LINT_LEVELS: [&str; 5] = ["allow", "expect", "warn", "deny", "forbid"];
    let mut body = item.clone();
    body.attrs
        .retain(|attr| LINT_LEVELS.iter().any(|level| attr.path().is_ident(level)));
    body.attrs
        .push(syn::parse_quote!(#[allow(clippy::unused_async)]));
    body.vis = syn::Visibility::Inherited;
    body.sig.ident = name.clone();
    body
}

/// `tokens` with every token on `span`: rustc reports an unmet bound of a call at the call
/// expression, whose span joins its first and last tokens.
pub fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut token| {
            if let TokenTree::Group(group) = &token {
                let mut respanned = Group::new(group.delimiter(), respan(group.stream(), span));
                respanned.set_span(span);
                token = TokenTree::Group(respanned);
            } else {
                token.set_span(span);
            }
            token
        })
        .collect()
}

fn task_tokens(task: &Task) -> TokenStream {
    let krate = &task.krate;
    let item = &task.item;
    let (attrs, vis, name) = (&item.attrs, &item.vis, &item.sig.ident);
    let body_name = format_ident!("__durable_mcp_task_body");
    let mut body = inner_body(item, &body_name);
    let warnings = crate::replay_lint::warnings(&body.block);
    body.block.stmts.splice(0..0, warnings);
    let input = &task.input;
    let output = &task.output;
    let (context, call) = if task.takes_context {
        (quote!(__cx), quote!(#body_name(__cx, __input)))
    } else {
        (quote!(_), quote!(#body_name(__input)))
    };
    // On the return type's span: a result or error type that does not fit is reported there.
    let conversion = respan(
        quote!(#krate::__private::into_task_result(#call.await)),
        task.result_span,
    );
    let tool_name = &task.tool_name;
    let title = option(task.title.as_deref());
    let description = option(task.description.as_deref());
    let ttl = option(task.ttl.as_ref().map(|ttl| match ttl {
        Ttl::For(millis) => {
            let duration = duration(*millis);
            quote!(::core::option::Option::Some(#duration))
        }
        Ttl::Forever => quote!(::core::option::Option::None),
    }));
    let poll_interval = option(task.poll_interval.map(duration));
    let retry = option(task.retry.as_ref().map(|r| retry(krate, r)));
    let step_timeout = option(task.step_timeout.map(duration));
    let cleanup_timeout = option(task.cleanup_timeout.map(duration));
    let required = task.required;
    let scopes = &task.scopes;
    let annotations = task
        .annotations
        .iter()
        .map(|(hint, value)| quote!((#hint, #value)));
    quote! {
        #(#attrs)*
        #vis fn #name() -> #krate::TaskTool {
            #body
            #krate::__private::task_tool::<#input, _>(
                #krate::__private::TaskSpec {
                    name: #tool_name,
                    title: #title,
                    description: #description,
                    ttl: #ttl,
                    poll_interval: #poll_interval,
                    retry: #retry,
                    timeout: #step_timeout,
                    cleanup_timeout: #cleanup_timeout,
                    required: #required,
                    annotations: &[#(#annotations),*],
                    scopes: &[#(#scopes),*],
                    output_schema: {
                        use #krate::__private::{StructuredOutput as _, UnstructuredOutput as _};
                        (&#krate::__private::OutputOf::<#output>::NEW).output_schema()
                    },
                },
                |#context, __input| {
                    ::std::boxed::Box::pin(async move {
                        #conversion
                    })
                },
            )
        }
    }
}

fn step_tokens(step: &Step) -> TokenStream {
    let krate = &step.krate;
    let item = &step.item;
    let (attrs, vis, name) = (&item.attrs, &item.vis, &item.sig.ident);
    let output_type = &item.sig.output;
    let body_name = format_ident!("__durable_mcp_step_body");
    let body = inner_body(item, &body_name);
    let (names, types): (Vec<_>, Vec<_>) = item
        .sig
        .inputs
        .iter()
        .filter_map(|arg| match arg {
            FnArg::Typed(typed) => match &*typed.pat {
                Pat::Ident(pat) => Some((pat.ident.clone(), typed.ty.clone())),
                _ => None,
            },
            FnArg::Receiver(_) => None,
        })
        .unzip();
    let journaled = journaled(krate, &step.output);
    let step_name = &step.step_name;
    let retry = option(step.retry.as_ref().map(|r| retry(krate, r)));
    let timeout = option(step.timeout.map(duration));
    // Only the call is on the return type's span, so that an error type other than StepError
    // is reported where the user wrote the type (the output is checked by `journaled`, on its
    // own type); the options stay on the macro's span, out of the user's lints.
    let prelude = quote! {
        #body
        #journaled
        let __durable_mcp_spec = #krate::__private::StepSpec { retry: #retry, timeout: #timeout };
        let __durable_mcp_run = move || #body_name(#(#names),*);
    };
    match (&item.sig.output, borrows(&types)) {
        // Claims the step's journal key when it is called, so that steps created together (for
        // `try_join_all`) get their keys in call order. Arguments that borrow would have to be
        // named in the returned future's type, which differs between editions: such a step
        // stays an `async fn` and claims its key when first polled.
        (ReturnType::Type(_, result), false) => {
            let call = respan(
                quote!(#krate::__private::run_step(#step_name, __durable_mcp_spec, __durable_mcp_journaled, __durable_mcp_run)),
                step.result_span,
            );
            quote! {
                #(#attrs)*
                #vis fn #name(#(#names: #types),*) -> #krate::__private::LocalBoxFuture<'static, #result> {
                    #prelude
                    #call
                }
            }
        }
        _ => {
            let call = respan(
                quote!(#krate::__private::run_step(#step_name, __durable_mcp_spec, __durable_mcp_journaled, __durable_mcp_run).await),
                step.result_span,
            );
            quote! {
                #(#attrs)*
                #vis async fn #name(#(#names: #types),*) #output_type {
                    #prelude
                    #call
                }
            }
        }
    }
}

/// `fn __durable_mcp_journaled(output: T) -> impl StepOutput + Into<T>`, the one check that the
/// step's output `T` can be journaled. `run_step` stores the opaque type, which meets its bound,
/// so an output that cannot be journaled is reported once, here. rustc reports it at the
/// `impl` type and labels the value: both span the user's `T` (rustc spans a type or an
/// expression from its first token to its last).
fn journaled(krate: &syn::Path, output: &Type) -> TokenStream {
    let tokens: Vec<TokenTree> = output.to_token_stream().into_iter().collect();
    let first = tokens.first().map_or_else(Span::call_site, TokenTree::span);
    let last = tokens.last().map_or(first, TokenTree::span);
    let impl_token = quote_spanned!(first=> impl);
    let close = quote_spanned!(last=> >);
    let value = respan(quote!(::core::convert::identity(output)), first);
    let value = with_last_span(value, last);
    quote! {
        fn __durable_mcp_journaled(output: #output)
            -> #impl_token #krate::__private::StepOutput + ::core::convert::Into<#output #close
        {
            #value
        }
    }
}

/// `tokens` with its last token on `span`.
fn with_last_span(tokens: TokenStream, span: Span) -> TokenStream {
    let mut tokens: Vec<TokenTree> = tokens.into_iter().collect();
    if let Some(token) = tokens.last_mut() {
        token.set_span(span);
    }
    tokens.into_iter().collect()
}

/// Whether any of `types` borrows: a reference, a lifetime, or an `impl Trait`.
fn borrows(types: &[Box<syn::Type>]) -> bool {
    fn scan(tokens: TokenStream) -> bool {
        tokens.into_iter().any(|token| match token {
            TokenTree::Group(group) => scan(group.stream()),
            TokenTree::Punct(punct) => matches!(punct.as_char(), '&' | '\''),
            TokenTree::Ident(ident) => ident == "impl" || ident == "dyn",
            TokenTree::Literal(_) => false,
        })
    }
    types.iter().any(|ty| scan(quote!(#ty)))
}
