//! The public API of `durable-mcp`, as its rendered docs show it, against the committed listing
//! `durable-mcp/public-api.txt`: every change to the surface a user can name shows up in review.
//!
//! The listing is read from the rustdoc HTML of `cargo doc --all-features` and of the wasm32
//! build with the `cloudflare` feature (which `cargo xtask test` builds just before): every item of the all-items page, then the members a
//! user can call or name on it (inherent methods, fields, variants, a trait's items), one per
//! line. Trait implementations are left out: they follow from the items.
//! `cargo xtask public-api --bless` writes the listing anew after a deliberate change.

use std::collections::BTreeSet;
use std::path::Path;

use xtask::Result;
use xtask::process::{target_dir, workspace_root};

/// Where the listing is committed, relative to the workspace root.
const LISTING: &str = "durable-mcp/public-api.txt";

/// The docs of the wasm32 build with the `cloudflare` feature, relative to the target directory.
const WASM_DOCS: &str = "wasm32-unknown-unknown/doc/durable_mcp";

/// The most items the all-items page may list: the crate stays small enough to learn.
const MOST_ITEMS: usize = 150;

/// Compares the rendered API with the listing (or, with `bless`, writes the listing).
pub fn check(bless: bool) -> Result<()> {
    let root = workspace_root();
    let target = target_dir(&root);
    let (items, mut listing) = render(&target.join("doc/durable_mcp"))?;
    // The Cloudflare host exists only on wasm32: its items come from that target's docs.
    let (_, worker_listing) = render(&target.join(WASM_DOCS))?;
    listing.extend(worker_listing);
    println!("xtask: durable-mcp's all-items page lists {items} items (at most {MOST_ITEMS})");
    if items > MOST_ITEMS {
        return Err(format!(
            "durable-mcp's public API lists {items} items, more than {MOST_ITEMS}: make what \
             users need not name pub(crate), or reach it through `__internals`"
        )
        .into());
    }
    let path = root.join(LISTING);
    let text = listing
        .iter()
        .map(|line| format!("{line}\n"))
        .collect::<String>();
    if bless {
        std::fs::write(&path, text)?;
        println!("xtask: wrote {LISTING} ({} lines)", listing.len());
        return Ok(());
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    let committed: BTreeSet<String> = committed.lines().map(str::to_owned).collect();
    let added: Vec<_> = listing.difference(&committed).collect();
    let removed: Vec<_> = committed.difference(&listing).collect();
    if added.is_empty() && removed.is_empty() {
        return Ok(());
    }
    let mut message = format!("durable-mcp's public API differs from {LISTING}:\n");
    for line in &added {
        message.push_str(&format!("  + {line}\n"));
    }
    for line in &removed {
        message.push_str(&format!("  - {line}\n"));
    }
    message.push_str(
        "if the change is deliberate, run `cargo doc -p durable-mcp --all-features --no-deps`, \
         the same with `--target wasm32-unknown-unknown --features cloudflare` in place of \
         `--all-features`, then `cargo xtask public-api --bless`, and commit the listing",
    );
    Err(message.into())
}

/// The number of items on the all-items page, and the listing: `kind path` per item, then
/// `kind path::member` per member.
fn render(docs: &Path) -> Result<(usize, BTreeSet<String>)> {
    let all = docs.join("all.html");
    let page = std::fs::read_to_string(&all).map_err(|e| {
        format!(
            "cannot read {}: {e}; run `cargo doc -p durable-mcp --no-deps` first (see the \
             module doc of xtask's public_api for the features and targets)",
            all.display()
        )
    })?;
    let mut listing = BTreeSet::new();
    let mut items = 0;
    for (href, path) in links(&page) {
        items += 1;
        let kind = href.rsplit('/').next().unwrap_or(href);
        let kind = kind.split('.').next().unwrap_or(kind);
        listing.insert(format!("{kind} {path}"));
        let item_path = docs.join(href);
        let item_page = std::fs::read_to_string(&item_path)
            .map_err(|e| format!("cannot read {}: {e}", item_path.display()))?;
        for member in members(&item_page) {
            listing.insert(format!(
                "{member_kind} {path}::{name}",
                member_kind = member.0,
                name = member.1
            ));
        }
    }
    Ok((items, listing))
}

/// The `(href, path)` of every `<li><a href="..">path</a></li>` in the all-items page's lists
/// (the sidebar before them links to the page's own sections).
fn links(page: &str) -> Vec<(&str, &str)> {
    page.split("<ul class=\"all-items\">")
        .skip(1)
        .flat_map(|list| list.split("</ul>").next())
        .flat_map(|list| list.split("<li><a href=\"").skip(1))
        .filter_map(|rest| {
            let (href, rest) = rest.split_once("\">")?;
            let (path, _) = rest.split_once("</a>")?;
            Some((href, path))
        })
        .collect()
}

/// The members an item's page documents before its implementations of traits, as
/// `(kind, name)`: rustdoc anchors them `id="kind.name"`.
fn members(page: &str) -> Vec<(&str, &str)> {
    const KINDS: [&str; 8] = [
        "method",
        "tymethod",
        "structfield",
        "variant",
        "associatedconstant",
        "associatedtype",
        "field",
        "tyconst",
    ];
    // Trait, auto-trait and blanket implementations follow the inherent ones, in that order.
    let own = ["trait", "synthetic", "blanket"]
        .iter()
        .filter_map(|kind| page.find(&format!("<h2 id=\"{kind}-implementations\"")))
        .min()
        .map_or(page, |end| &page[..end]);
    own.split(" id=\"")
        .skip(1)
        .filter_map(|rest| {
            let (anchor, _) = rest.split_once('"')?;
            let (kind, name) = anchor.split_once('.')?;
            // A variant's fields are anchored `variant.Name.field.x`: keep the variant only.
            (KINDS.contains(&kind) && !name.contains('.')).then_some((kind, name))
        })
        .collect()
}
