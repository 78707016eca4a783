//! What the course's tools share: where the workspace is, how a trace is
//! drawn ([`timeline`]), and how a lesson becomes a starter ([`starter`]).

pub mod lesson_diff;
pub mod starter;
pub mod testdir;
pub mod timeline;
pub mod transcripts;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// The course checkout to work on, found at run time: `root` when given
/// (`--root`), else what `cargo locate-project --workspace` says for the
/// current directory, else the nearest `Cargo.toml` with a `[workspace]`
/// table above it.
///
/// Not the directory the tool was *built* in: a binary reused from a target
/// directory that two checkouts share must read and write the checkout it
/// is run in.
pub fn workspace_root(root: Option<&Path>) -> Result<PathBuf> {
    if let Some(root) = root {
        if !root.join("Cargo.toml").is_file() {
            bail!("--root {}: no Cargo.toml there", root.display());
        }
        return Ok(root.to_path_buf());
    }
    let here = std::env::current_dir().context("the current directory")?;
    let located = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["locate-project", "--workspace", "--message-format", "plain"])
        .current_dir(&here)
        .output();
    if let Ok(out) = located {
        if out.status.success() {
            let manifest = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            if let Some(dir) = manifest.parent() {
                return Ok(dir.to_path_buf());
            }
        }
    }
    here.ancestors()
        .find(|dir| {
            std::fs::read_to_string(dir.join("Cargo.toml"))
                .is_ok_and(|text| text.lines().any(|l| l.trim() == "[workspace]"))
        })
        .map(Path::to_path_buf)
        .with_context(|| {
            format!(
                "{} is not inside the course's checkout: run from there, or give --root DIR",
                here.display()
            )
        })
}
