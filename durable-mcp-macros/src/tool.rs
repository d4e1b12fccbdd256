//! `#[tool]`: a plain tool from an `async fn`, checked (`Tool::new`) and expanded
//! (`tokens`) with the pieces `#[mcp_task]` uses.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{ItemFn, ReturnType, Type};

use crate::args::ToolArgs;
use crate::expand::{checked_options, crate_path, inner_body, option, respan, stand_in};
use crate::model::{
    Errors, annotations, check_signature, default_crate, doc_comment, name, result_span,
    result_types, scopes, typed_params,
};

/// The options `#[tool]` accepts.
const OPTIONS: &[&str] = &[
    "name",
    "title",
    "description",
    "annotations",
    "scopes",
    "crate",
];

/// The shapes a `#[tool]` fn may have, for the messages.
const SHAPE: &str = "async fn name(call: &ToolCall, input: Input) -> Result<R, E>";

/// `#[tool]`: the expansion, or the errors next to a stand-in for the user's fn.
pub fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let krate = crate_path(args.clone());
    let returns = quote!(#krate::PlainTool);
    checked(args, item.clone())
        .map(|tool| tokens(&tool))
        .unwrap_or_else(|errors| stand_in(item, errors, &returns))
}

/// What the fn answers with.
enum Output {
    /// `Result<R, E>`: `R` is the result, `E` a tool error.
    Result(Type),
    /// Any other type: the result, infallibly.
    Value(Type),
}

/// A `#[tool]` fn, checked.
struct Tool {
    krate: syn::Path,
    item: ItemFn,
    tool_name: String,
    title: Option<String>,
    description: Option<String>,
    annotations: Vec<(&'static str, bool)>,
    scopes: Vec<String>,
    /// Whether the fn takes the call first.
    takes_call: bool,
    /// The input type, if the fn takes one.
    input: Option<Type>,
    output: Output,
    /// Where the fn's return type is written (type errors of the output are reported there).
    result_span: Span,
}

fn checked(args: TokenStream, item: TokenStream) -> Result<Tool, TokenStream> {
    let item: ItemFn = syn::parse2(item).map_err(|e| e.to_compile_error())?;
    checked_options(args, "#[tool]", OPTIONS, &[], |args: ToolArgs| {
        Tool::new(args, item)
    })
}

impl Tool {
    fn new(args: ToolArgs, item: ItemFn) -> syn::Result<Self> {
        let mut errors = Errors::default();
        check_signature(&mut errors, &item, "#[tool]", SHAPE);
        let is_call = |param: &syn::PatType| matches!(*param.ty, Type::Reference(_));
        let (takes_call, input) = match typed_params(&item).as_slice() {
            [] => (false, None),
            [call] if is_call(call) => (true, None),
            [input] => (false, Some((*input.ty).clone())),
            [call, input] => {
                if !is_call(call) {
                    errors.push(
                        call.ty.span(),
                        format!("the first parameter is the call: `call: &ToolCall` ({SHAPE})"),
                    );
                }
                (true, Some((*input.ty).clone()))
            }
            [_, _, extra, ..] => {
                errors.push(
                    extra.span(),
                    format!(
                        "#[tool] takes at most the call and one input: `{SHAPE}`; put the \
                         arguments in the input type's fields"
                    ),
                );
                (false, None)
            }
        };
        let output = match &item.sig.output {
            ReturnType::Type(_, ty) => match result_types(ty) {
                Some((result, _)) => Some(Output::Result(result)),
                None => Some(Output::Value((**ty).clone())),
            },
            ReturnType::Default => {
                errors.push(
                    item.sig.ident.span(),
                    format!(
                        "a #[tool] fn returns its result: `{SHAPE}`, or `-> R` when it cannot \
                         fail (R: a String, a CallToolResult, Json(value) or a ToolOutcome)"
                    ),
                );
                None
            }
        };
        let tool_name = name(&mut errors, args.name.as_ref(), &item);
        let scopes = scopes(&mut errors, args.scopes.as_deref());
        errors.finish()?;
        Ok(Tool {
            krate: args.krate.unwrap_or_else(default_crate),
            tool_name,
            title: args.title,
            description: args.description.or_else(|| doc_comment(&item)),
            annotations: annotations(args.annotations.as_ref()),
            scopes,
            takes_call,
            input,
            output: output.expect("an output when there are no errors"),
            result_span: result_span(&item),
            item,
        })
    }
}

fn tokens(tool: &Tool) -> TokenStream {
    let krate = &tool.krate;
    let item = &tool.item;
    let (attrs, vis, name) = (&item.attrs, &item.vis, &item.sig.ident);
    let body_name = format_ident!("__durable_mcp_tool_body");
    let body = inner_body(item, &body_name);
    let input = match &tool.input {
        Some(input) => quote!(#input),
        None => quote!(#krate::__private::NoInput),
    };
    let arguments = match (tool.takes_call, tool.input.is_some()) {
        (true, true) => quote!(__call, __input),
        (true, false) => quote!(__call),
        (false, true) => quote!(__input),
        (false, false) => quote!(),
    };
    let call = quote!(#body_name(#arguments).await);
    // On the return type's span: a result or error type that does not fit is reported there.
    let (output, conversion) = match &tool.output {
        Output::Result(result) => (result, quote!(#krate::__private::tool_result(#call))),
        Output::Value(value) => (value, quote!(#krate::__private::tool_value(#call))),
    };
    let conversion = respan(conversion, tool.result_span);
    let tool_name = &tool.tool_name;
    let title = option(tool.title.as_deref());
    let description = option(tool.description.as_deref());
    let annotations = tool
        .annotations
        .iter()
        .map(|(hint, value)| quote!((#hint, #value)));
    let scopes = &tool.scopes;
    quote! {
        #(#attrs)*
        #vis fn #name() -> #krate::PlainTool {
            #body
            #krate::__private::plain_tool::<#input, #output, _>(
                #krate::__private::ToolSpec {
                    name: #tool_name,
                    title: #title,
                    description: #description,
                    annotations: &[#(#annotations),*],
                    scopes: &[#(#scopes),*],
                },
                |__call, __input| {
                    ::std::boxed::Box::pin(async move {
                        #conversion
                    })
                },
            )
        }
    }
}
