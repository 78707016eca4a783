//! `api-docs`: `shared`'s API documentation, inside the course book.
//!
//! ```text
//! cargo run -p course-tools --bin api-docs
//! ```
//!
//! The goals and steps of the book's building mode link each item of
//! `shared` they name to its page of API documentation (see the starter's
//! `api` module). Those pages are rustdoc's, generated here from the doc
//! comments (`cargo doc -p shared --no-deps`) and copied into
//! `docs/src/api/`, where mdBook copies them into the built book: they work
//! offline and under `mdbook serve`. They are generated, not kept in the
//! repository (`.gitignore`); run this once before building the book, and
//! again when `shared` changes.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{bail, Context, Result};

fn main() -> ExitCode {
    match run() {
        Ok(dest) => {
            println!("wrote shared's API pages to {}", dest.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("api-docs: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<PathBuf> {
    let root = course_tools::workspace_root(None)?;
    // A target directory of its own: the pages copied are then `shared`'s
    // alone, never a lesson's (whose source is the learner's to write) that
    // a `cargo doc` of the workspace left in the usual one.
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("api-docs");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["doc", "-q", "-p", "shared", "--no-deps"])
        .current_dir(&root)
        .env("CARGO_TARGET_DIR", &target)
        // Doc links to private items serve readers of the source; the
        // public pages simply show them as text.
        .env("RUSTDOCFLAGS", "-A rustdoc::private_intra_doc_links")
        .status()
        .context("run cargo doc")?;
    if !status.success() {
        bail!("cargo doc -p shared --no-deps failed");
    }
    let dest = root.join("docs/src/api");
    if dest.exists() {
        std::fs::remove_dir_all(&dest).with_context(|| format!("clear {}", dest.display()))?;
    }
    copy_dir(&target.join("doc"), &dest)?;
    Ok(dest)
}

/// Copies the folder `from` to `to`, recursively.
fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("create {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("read {}", from.display()))? {
        let entry = entry?;
        let path = entry.path();
        let dest = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&path, &dest)?;
        } else {
            std::fs::copy(&path, &dest)
                .with_context(|| format!("copy {} to {}", path.display(), dest.display()))?;
        }
    }
    Ok(())
}
