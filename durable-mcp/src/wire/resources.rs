//! Resources: their descriptors and contents.

use serde::{Deserialize, Serialize};

/// A resource `resources/list` describes: [`Resource::new`], then the setters. More fields may
/// come in a minor release.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Resource {
    /// Its URI (what `resources/read` and `Mcp-Name` carry).
    pub uri: String,
    /// Its name.
    pub name: String,
    /// What it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

impl Resource {
    /// The resource at `uri`, named `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Resource {
            uri: uri.into(),
            name: name.into(),
            description: None,
            mime_type: None,
        }
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the MIME type.
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

/// A family of resources `resources/templates/list` describes: [`ResourceTemplate::new`], then
/// the setters. More fields may come in a minor release.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceTemplate {
    /// An RFC 6570 URI template.
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// What it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of its resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

impl ResourceTemplate {
    /// The resources matching the RFC 6570 URI template `uri_template`, named `name`.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceTemplate {
            uri_template: uri_template.into(),
            name: name.into(),
            description: None,
            mime_type: None,
        }
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the MIME type of its resources.
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

/// The contents of one read resource.
///
/// More kinds of contents may come in a minor release: a `match` on one needs a `_` arm.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum ResourceContents {
    /// Text contents.
    Text {
        /// The URI read.
        uri: String,
        /// Its MIME type.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The text.
        text: String,
    },
    /// Binary contents, base64.
    Blob {
        /// The URI read.
        uri: String,
        /// Its MIME type.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Base64 bytes.
        blob: String,
    },
}

impl ResourceContents {
    /// Text contents of `uri`.
    pub fn text(uri: impl Into<String>, mime_type: Option<&str>, text: impl Into<String>) -> Self {
        ResourceContents::Text {
            uri: uri.into(),
            mime_type: mime_type.map(str::to_owned),
            text: text.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_constructors_serialise_with_the_wire_names_and_without_empty_fields() {
        let resource = Resource::new("file:///a.svg", "a")
            .description("A picture")
            .mime_type("image/svg+xml");
        assert_eq!(
            json!(resource),
            json!({ "uri": "file:///a.svg", "name": "a", "description": "A picture",
                    "mimeType": "image/svg+xml" })
        );
        assert_eq!(
            json!(Resource::new("u", "n")),
            json!({ "uri": "u", "name": "n" })
        );
        let template = ResourceTemplate::new("file:///{path}", "files").mime_type("text/plain");
        assert_eq!(
            json!(template),
            json!({ "uriTemplate": "file:///{path}", "name": "files", "mimeType": "text/plain" })
        );
    }
}
