//! What the course's tools share: where the workspace is, and how a trace
//! is drawn ([`timeline`]).

pub mod timeline;

use std::path::{Path, PathBuf};

/// The workspace these tools were built in: `shared/tools/` is two levels
/// below it, and Cargo tells us where that is. `cargo run` from any
/// directory of the checkout then finds the lessons and the book.
pub fn workspace_root() -> PathBuf {
    let tools = Path::new(env!("CARGO_MANIFEST_DIR"));
    tools.ancestors().nth(2).unwrap_or(tools).to_path_buf()
}
