//! The safety check for scenes and sprites. The page inlines them into its own document, so an
//! SVG must not run code or load anything: it must be a plain `<svg>` element whose links and
//! references stay inside itself (`#fragment`).
//!
//! The check is a conservative text scan (case-insensitive), not a parser: it may refuse an
//! odd but harmless SVG (say, the word `onset=` in a text node), never the other way round.

/// Every reason `svg` is unsafe to inline, each saying what to remove; empty when it is safe.
pub(crate) fn unsafe_parts(svg: &str) -> Vec<String> {
    let lower = svg.to_ascii_lowercase();
    let mut reasons = Vec::new();
    if !lower.trim_start().starts_with("<svg") {
        reasons.push("must start with `<svg` (no XML prolog, doctype or comment before it)".into());
    }
    for (needle, what) in [
        ("<script", "contains a `<script>` element; remove it"),
        (
            "<foreignobject",
            "contains a `<foreignObject>` element, which can embed HTML; remove it",
        ),
        (
            "<!",
            "contains a `<!...>` declaration (doctype, entity or CDATA); remove it",
        ),
        (
            "@import",
            "contains a CSS `@import`, which loads a stylesheet; inline the rules instead",
        ),
    ] {
        if lower.contains(needle) {
            reasons.push(what.to_owned());
        }
    }
    if let Some(attribute) = event_attribute(&lower) {
        reasons.push(format!(
            "has an event attribute `{attribute}=`, which runs script; remove it"
        ));
    }
    for value in attribute_values(&lower, "href") {
        if !value.starts_with('#') {
            reasons.push(format!(
                "links to `{value}`; `href` and `xlink:href` may only name a `#fragment` of the SVG itself"
            ));
        }
    }
    for value in url_arguments(&lower) {
        if !value.starts_with('#') {
            reasons.push(format!(
                "references `url({value})`; `url(...)` may only name a `#fragment` of the SVG itself"
            ));
        }
    }
    reasons
}

/// The first `on<letters>=` attribute name preceded by whitespace, a quote or `/`.
fn event_attribute(lower: &str) -> Option<String> {
    let bytes = lower.as_bytes();
    let mut from = 0;
    while let Some(found) = lower[from..].find("on") {
        let at = from + found;
        from = at + 2;
        let boundary = at == 0
            || matches!(
                bytes[at - 1],
                b' ' | b'\t' | b'\n' | b'\r' | b'"' | b'\'' | b'/'
            );
        if !boundary {
            continue;
        }
        let name_end = at
            + 2
            + bytes[at + 2..]
                .iter()
                .take_while(|b| b.is_ascii_alphabetic())
                .count();
        if name_end == at + 2 {
            continue;
        }
        let rest = lower[name_end..].trim_start();
        if rest.starts_with('=') {
            return Some(lower[at..name_end].to_owned());
        }
    }
    None
}

/// The values of every attribute whose name ends in `name` (so `href` finds `xlink:href`).
fn attribute_values(lower: &str, name: &str) -> Vec<String> {
    let mut values = Vec::new();
    let mut from = 0;
    while let Some(found) = lower[from..].find(name) {
        let at = from + found;
        from = at + name.len();
        let Some(rest) = lower[from..].trim_start().strip_prefix('=') else {
            continue;
        };
        values.push(unquote(rest.trim_start()));
    }
    values
}

/// The arguments of every `url(...)`, quotes and spaces stripped.
fn url_arguments(lower: &str) -> Vec<String> {
    let mut values = Vec::new();
    let mut from = 0;
    while let Some(found) = lower[from..].find("url(") {
        let at = from + found + "url(".len();
        from = at;
        let inner = lower[at..].split(')').next().unwrap_or_default().trim();
        values.push(
            inner
                .trim_matches(|c| c == '"' || c == '\'')
                .trim()
                .to_owned(),
        );
    }
    values
}

/// The value at the start of `rest`: up to the matching quote, or up to whitespace or `>`.
fn unquote(rest: &str) -> String {
    match rest.chars().next() {
        Some(quote @ ('"' | '\'')) => rest[1..]
            .split(quote)
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned(),
        _ => rest
            .split(|c: char| c.is_whitespace() || c == '>')
            .next()
            .unwrap_or_default()
            .to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::unsafe_parts;

    #[test]
    fn a_plain_svg_with_internal_references_is_safe() {
        let svg = r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10">
            <defs><linearGradient id="g"/></defs>
            <rect fill="url(#g)" width="10" height="10"/><use href="#g"/><use xlink:href='#g'/>
            <text>Sonata on a hot afternoon</text></svg>"##;
        assert_eq!(unsafe_parts(svg), Vec::<String>::new());
    }

    #[test]
    fn each_unsafe_feature_is_named() {
        let cases = [
            ("<svg><script>alert(1)</script></svg>", "<script>"),
            ("<svg onload=\"x()\"></svg>", "onload="),
            ("<svg><rect ONCLICK = 'x()'/></svg>", "onclick="),
            (
                "<svg><a href=\"https://example.com\">x</a></svg>",
                "https://example.com",
            ),
            (
                "<svg><use xlink:href=\"sprites.svg#a\"/></svg>",
                "sprites.svg#a",
            ),
            (
                "<svg><rect fill=\"url(https://x/y.png)\"/></svg>",
                "url(https://x/y.png)",
            ),
            ("<svg><foreignObject/></svg>", "<foreignObject>"),
            (
                "<?xml version=\"1.0\"?><svg></svg>",
                "must start with `<svg`",
            ),
        ];
        for (svg, expected) in cases {
            let reasons = unsafe_parts(svg);
            assert!(
                reasons.iter().any(|reason| reason.contains(expected)),
                "{svg}: {reasons:?} should mention {expected}"
            );
        }
    }
}
