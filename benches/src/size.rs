//! `cargo xtask size`: where the bytes of the deployed Worker's wasm go.
//!
//! Builds `examples/report-task` as deployed (worker-build with wasm-opt, as
//! `cargo xtask bench worker` does) and prints its raw and gzipped size; then builds it again
//! with the symbol names kept (`CARGO_PROFILE_WORKER_STRIP=false`, no wasm-opt, into
//! `build/names/`) and prints the code bytes by crate, the workspace's own code by item, and the
//! largest functions. A function belongs to the first crate its name mentions, so
//! `serde_json::de::from_str::<durable_mcp::..>` counts for serde_json; the last column says
//! how much of a crate's code is instantiated for the workspace's own types. Nothing is
//! asserted; the first unstripped build rebuilds std (about ten minutes), later ones take as long
//! as a Worker build.
//!
//! `size --smoke` (run by `cargo xtask test`, see xtask's `smoke` module) builds as deployed and
//! reads that module, whose names are stripped, instead of building again with names: the build
//! with names shares nothing with the others, and would add those ten minutes to the test command.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use durable_mcp_tests::workerd::{build_worker_optimized, worker_build};
use xtask::Result;
use xtask::process::workspace_root;

use crate::scale::Scale;
use crate::worker::wasm_size;

/// The Worker measured: the one the root `wrangler.toml` deploys.
const WORKER_CRATE: &str = "examples/report-task";
/// Where the build with names goes, relative to the crate.
const NAMES_OUT_DIR: &str = "build/names";
/// Rows of each table.
const ROWS: usize = 25;

/// Builds, measures, prints; a smoke run reads the deployed module instead of one with names.
pub fn run(scale: Scale) -> Result<()> {
    if scale == Scale::Smoke {
        println!(
            "size --smoke: a smoke run, to show that the command works: no build with names \
             (its tables list unnamed functions); nothing is judged"
        );
    }
    xtask::worker_tools::ensure_wasm_opt()?;
    let dir = workspace_root().join(WORKER_CRATE);
    eprintln!("size: building {WORKER_CRATE} as deployed (worker-build, wasm-opt)");
    std::panic::catch_unwind(|| build_worker_optimized(&dir))
        .map_err(|_| format!("worker-build failed in {WORKER_CRATE}"))?;
    let deployed = dir.join("build/index_bg.wasm");
    let (raw, gzipped) = wasm_size(&deployed)?;
    let analysed = match scale {
        Scale::Full => build_with_names(&dir)?,
        Scale::Smoke => deployed,
    };
    let module = Module::read(&analysed)?;

    println!();
    println!("{WORKER_CRATE} index_bg.wasm as deployed: {raw} bytes, {gzipped} gzip -9");
    if scale == Scale::Full {
        let (names_raw, names_gzipped) = wasm_size(&analysed)?;
        println!(
            "before wasm-opt, with names ({}): {names_raw} bytes, {names_gzipped} gzip -9",
            analysed.display()
        );
    }
    println!();
    print_sections(&module);
    print_crates(&module);
    print_workspace_items(&module);
    print_largest(&module);
    Ok(())
}

/// Builds the crate in `dir` with its symbol names kept and no wasm-opt; returns its module.
fn build_with_names(dir: &Path) -> Result<PathBuf> {
    eprintln!("size: building {WORKER_CRATE} with its symbol names (no wasm-opt)");
    let status = worker_build(dir)
        .args(["--profile", "worker", "--no-opt", "--panic-unwind"])
        .args(["--out-dir", NAMES_OUT_DIR])
        .env("CARGO_PROFILE_WORKER_STRIP", "false")
        .status()?;
    if !status.success() {
        return Err(format!("worker-build (with names) failed in {WORKER_CRATE}").into());
    }
    Ok(dir.join(NAMES_OUT_DIR).join("index_bg.wasm"))
}

/// The parts of a wasm module the report needs.
#[derive(Default)]
struct Module {
    /// Every section: its name and size.
    sections: Vec<(String, usize)>,
    /// Each defined function's name (or `func[i]`) and body size.
    functions: Vec<(String, usize)>,
}

impl Module {
    fn read(path: &Path) -> Result<Module> {
        let bytes = std::fs::read(path)?;
        if bytes.get(..4) != Some(b"\0asm".as_slice()) {
            return Err(format!("{} is not a wasm module", path.display()).into());
        }
        let mut module = Module::default();
        let mut imported_functions = 0;
        let mut bodies = Vec::new();
        let mut names = HashMap::new();
        let mut at = 8;
        while at < bytes.len() {
            let id = bytes[at];
            let mut reader = Reader {
                bytes: &bytes,
                at: at + 1,
            };
            let size = reader.leb()?;
            let start = reader.at;
            let end = start + size;
            let section = Reader {
                bytes: &bytes[..end],
                at: start,
            };
            let name = match id {
                0 => {
                    let mut custom = section;
                    let name = custom.name()?;
                    if name == "name" {
                        read_function_names(custom, &mut names)?;
                    }
                    format!("custom {name}")
                }
                2 => {
                    imported_functions = count_function_imports(section)?;
                    "import".to_owned()
                }
                10 => {
                    bodies = body_sizes(section)?;
                    "code".to_owned()
                }
                _ => SECTIONS
                    .get(usize::from(id))
                    .copied()
                    .unwrap_or("?")
                    .to_owned(),
            };
            module.sections.push((name, size));
            at = end;
        }
        module.functions = bodies
            .into_iter()
            .enumerate()
            .map(|(i, size)| {
                let index = imported_functions + i;
                let name = names
                    .remove(&index)
                    .unwrap_or_else(|| format!("func[{index}]"));
                (name, size)
            })
            .collect();
        Ok(module)
    }
}

const SECTIONS: [&str; 14] = [
    "custom",
    "type",
    "import",
    "function",
    "table",
    "memory",
    "global",
    "export",
    "start",
    "element",
    "code",
    "data",
    "data count",
    "tag",
];

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8> {
        let byte = *self.bytes.get(self.at).ok_or("the module ends early")?;
        self.at += 1;
        Ok(byte)
    }

    fn leb(&mut self) -> Result<usize> {
        let mut value = 0usize;
        for shift in (0..35).step_by(7) {
            let byte = self.byte()?;
            value |= usize::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(value);
            }
        }
        Err("a LEB128 number is too long".into())
    }

    fn name(&mut self) -> Result<String> {
        let len = self.leb()?;
        let text = self
            .bytes
            .get(self.at..self.at + len)
            .ok_or("a name runs past its section")?;
        self.at += len;
        Ok(String::from_utf8_lossy(text).into_owned())
    }

    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }
}

fn count_function_imports(mut section: Reader<'_>) -> Result<usize> {
    let mut functions = 0;
    for _ in 0..section.leb()? {
        section.name()?;
        section.name()?;
        match section.byte()? {
            0 => {
                functions += 1;
                section.leb()?;
            }
            // table: reftype, limits
            1 => {
                section.byte()?;
                skip_limits(&mut section)?;
            }
            // memory: limits
            2 => skip_limits(&mut section)?,
            // global: valtype, mutability
            3 => {
                section.byte()?;
                section.byte()?;
            }
            // tag: attribute, type index
            4 => {
                section.byte()?;
                section.leb()?;
            }
            kind => return Err(format!("unknown import kind {kind}").into()),
        }
    }
    Ok(functions)
}

fn skip_limits(section: &mut Reader<'_>) -> Result<()> {
    let flags = section.byte()?;
    section.leb()?;
    if flags & 1 == 1 {
        section.leb()?;
    }
    Ok(())
}

fn body_sizes(mut section: Reader<'_>) -> Result<Vec<usize>> {
    let count = section.leb()?;
    let mut sizes = Vec::with_capacity(count);
    for _ in 0..count {
        let before = section.at;
        let size = section.leb()?;
        section.at += size;
        sizes.push(section.at - before);
    }
    Ok(sizes)
}

/// The function names subsection (1) of the `name` section.
fn read_function_names(mut section: Reader<'_>, names: &mut HashMap<usize, String>) -> Result<()> {
    while !section.done() {
        let id = section.byte()?;
        let size = section.leb()?;
        let end = section.at + size;
        if id == 1 {
            for _ in 0..section.leb()? {
                let index = section.leb()?;
                names.insert(index, section.name()?);
            }
        }
        section.at = end;
    }
    Ok(())
}

/// The crate a function's name mentions first: `core` for
/// `<core::option::Option<durable_mcp[..]::X> as ..>`, `wasm-bindgen glue` for its exports.
fn crate_of(name: &str) -> &str {
    let trimmed = name.trim_start_matches(['<', '&', '*', '(', '[', ' ']);
    let trimmed = trimmed
        .strip_prefix("mut ")
        .or_else(|| trimmed.strip_prefix("dyn "))
        .or_else(|| trimmed.strip_prefix("const "))
        .unwrap_or(trimmed);
    let end = trimmed
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(trimmed.len());
    let head = &trimmed[..end];
    let rest = &trimmed[end..];
    if !head.is_empty() && (rest.starts_with("::") || rest.starts_with('[')) {
        head
    } else if name.starts_with("__wbg") || name.starts_with("__wbindgen") {
        "wasm-bindgen glue"
    } else if name.starts_with("func[") {
        "(no name)"
    } else {
        "(other)"
    }
}

/// Whether a function is the workspace's own or instantiated for one of its types.
fn mentions_workspace(name: &str) -> bool {
    [
        "durable_mcp[",
        "durable_mcp::",
        "report_task[",
        "report_task::",
    ]
    .iter()
    .any(|needle| name.contains(needle))
}

/// The fewest hex digits a crate's hash in a symbol name has: 16, less the leading zeros
/// rustc leaves out (one in 4,096 hashes has three).
const MIN_HASH_DIGITS: usize = 12;

/// A name without the crates' disambiguating hashes (`serde_json[1e78..]` to `serde_json`).
/// A hash is up to 16 hex digits (rustc leaves out leading zeros), so it is told from an
/// index such as `func[12]` by its length: at least [`MIN_HASH_DIGITS`].
fn without_hashes(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(open) = rest.find('[') {
        let hash = &rest[open + 1..];
        let digits = hash.bytes().take_while(u8::is_ascii_hexdigit).count();
        let is_hash =
            (MIN_HASH_DIGITS..=16).contains(&digits) && hash.as_bytes().get(digits) == Some(&b']');
        out.push_str(&rest[..open]);
        if is_hash {
            rest = &hash[digits + 1..];
        } else {
            out.push('[');
            rest = hash;
        }
    }
    out.push_str(rest);
    out
}

fn percent(part: usize, whole: usize) -> f64 {
    #[allow(clippy::cast_precision_loss)] // sizes far below 2^52
    let ratio = part as f64 / whole.max(1) as f64;
    100.0 * ratio
}

fn print_sections(module: &Module) {
    let total: usize = module.sections.iter().map(|(_, size)| size).sum();
    let mut sections = module.sections.clone();
    sections.sort_by_key(|(_, size)| std::cmp::Reverse(*size));
    println!("sections (with names):");
    for (name, size) in sections.iter().filter(|(_, size)| *size >= 1000) {
        println!("  {name:<24} {size:>9} {:>5.1}%", percent(*size, total));
    }
    println!();
}

fn print_crates(module: &Module) {
    let code: usize = module.functions.iter().map(|(_, size)| size).sum();
    let mut crates: HashMap<&str, (usize, usize, usize)> = HashMap::new();
    for (name, size) in &module.functions {
        let entry = crates.entry(crate_of(name)).or_default();
        entry.0 += size;
        entry.1 += 1;
        if mentions_workspace(name) {
            entry.2 += size;
        }
    }
    let mut crates: Vec<_> = crates.into_iter().collect();
    crates.sort_by_key(|(_, (size, _, _))| std::cmp::Reverse(*size));
    println!(
        "code by crate ({code} bytes in {} functions):",
        module.functions.len()
    );
    println!(
        "  {:<24} {:>9} {:>6} {:>6} {:>12}",
        "crate", "bytes", "%", "fns", "for ours"
    );
    for (name, (size, count, ours)) in crates.iter().take(ROWS) {
        println!(
            "  {name:<24} {size:>9} {:>5.1}% {count:>6} {ours:>12}",
            percent(*size, code)
        );
    }
    println!();
}

/// The workspace's code (with other crates' code instantiated for it) by the workspace item
/// named: `durable_mcp::rpc::legacy::LegacyCall`, `report_task::tools::server`.
fn print_workspace_items(module: &Module) {
    let mut items: HashMap<String, usize> = HashMap::new();
    for (name, size) in &module.functions {
        let name = without_hashes(name);
        let Some(start) = ["durable_mcp::", "report_task::"]
            .iter()
            .filter_map(|needle| name.find(needle))
            .min()
        else {
            continue;
        };
        let mut item = Vec::new();
        for part in name[start..].split("::") {
            let part = part
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .next()
                .unwrap_or_default();
            if part.is_empty() {
                break;
            }
            item.push(part);
            // Stop at the first type or function below a module.
            if part.starts_with(|c: char| c.is_ascii_uppercase()) || item.len() == 4 {
                break;
            }
        }
        *items.entry(item.join("::")).or_default() += size;
    }
    let total: usize = items.values().sum();
    let mut items: Vec<_> = items.into_iter().collect();
    items.sort_by_key(|(_, size)| std::cmp::Reverse(*size));
    println!(
        "the workspace's code by item, with other crates' code instantiated for it ({total} bytes):"
    );
    for (item, size) in items.iter().take(ROWS) {
        println!("  {size:>9}  {item}");
    }
    println!();
}

fn print_largest(module: &Module) {
    let mut functions: Vec<_> = module.functions.iter().collect();
    functions.sort_by_key(|(_, size)| std::cmp::Reverse(*size));
    println!("largest functions:");
    for (name, size) in functions.iter().take(ROWS) {
        let mut name = without_hashes(name);
        if name.len() > 150 {
            let cut = name.floor_char_boundary(150);
            name.truncate(cut);
            name.push_str("..");
        }
        println!("  {size:>9}  {name}");
    }
}

#[cfg(test)]
mod tests {
    use super::without_hashes;

    #[test]
    fn hashes_of_any_length_go_and_indexes_stay() {
        assert_eq!(
            without_hashes("<durable_mcp[6c6817a159d314f]::rpc::Router>::handle"),
            "<durable_mcp::rpc::Router>::handle"
        );
        assert_eq!(
            without_hashes("serde_json[1e78a2b3c4d5e6f7]::de::from_str"),
            "serde_json::de::from_str"
        );
        assert_eq!(without_hashes("func[12]"), "func[12]");
        assert_eq!(
            without_hashes("<[u8; 16] as Debug>::fmt"),
            "<[u8; 16] as Debug>::fmt"
        );
    }
}
