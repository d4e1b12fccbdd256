//! The resources the `resources-*` scenarios read:
//!
//! | URI | contents |
//! | --- | --- |
//! | `test://static-text` | a sentence of plain text |
//! | `test://static-binary` | a 1x1 red PNG, as a blob |
//! | `test://template/{id}/data` | JSON naming `id` |

use durable_mcp::McpServer;
use durable_mcp::wire::{ErrorObject, Resource, ResourceContents, ResourceTemplate, code};
use serde_json::json;

use super::media::RED_PIXEL_PNG;

const STATIC_TEXT: &str = "test://static-text";
const STATIC_BINARY: &str = "test://static-binary";
const TEMPLATE_PREFIX: &str = "test://template/";
const TEMPLATE_SUFFIX: &str = "/data";

/// Adds the resource fixtures to `server`.
pub fn add(server: McpServer) -> McpServer {
    server
        .resource(
            resource(
                STATIC_TEXT,
                "static-text",
                "A fixed sentence.",
                "text/plain",
            ),
            |uri| async move {
                let text = "This is the content of the static text resource.";
                Ok(vec![ResourceContents::text(uri, Some("text/plain"), text)])
            },
        )
        .resource(
            resource(
                STATIC_BINARY,
                "static-binary",
                "A 1x1 red PNG.",
                "image/png",
            ),
            |uri| async move {
                Ok(vec![ResourceContents::Blob {
                    uri,
                    mime_type: Some("image/png".to_owned()),
                    blob: RED_PIXEL_PNG.to_owned(),
                }])
            },
        )
        .resource_template(
            ResourceTemplate::new(
                format!("{TEMPLATE_PREFIX}{{id}}{TEMPLATE_SUFFIX}"),
                "template-data",
            )
            .description("JSON data for the item `id`.")
            .mime_type("application/json"),
            |uri| async move { read_template(uri) },
        )
}

fn resource(uri: &str, name: &str, description: &str, mime_type: &str) -> Resource {
    Resource::new(uri, name)
        .description(description)
        .mime_type(mime_type)
}

/// Reads `test://template/{id}/data`. The router hands this reader every URI under the
/// template's prefix, so anything else under it is an unknown resource.
fn read_template(uri: String) -> Result<Vec<ResourceContents>, ErrorObject> {
    let id = uri
        .strip_prefix(TEMPLATE_PREFIX)
        .and_then(|rest| rest.strip_suffix(TEMPLATE_SUFFIX))
        .filter(|id| !id.is_empty() && !id.contains('/'));
    let Some(id) = id else {
        return Err(
            ErrorObject::new(code::INVALID_PARAMS, format!("Resource not found: {uri}"))
                .with_data(json!({ "uri": uri })),
        );
    };
    let data = json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
    Ok(vec![ResourceContents::text(
        uri.clone(),
        Some("application/json"),
        data.to_string(),
    )])
}
