//! Finding a function's body with a Rust parser, and blanking it.
//!
//! `syn` parses the file; `proc-macro2`'s span locations give each body's
//! braces as line and column, which we turn into byte offsets and splice:
//! the rest of the file (doc comments, other functions, `// ANCHOR:` lines)
//! stays byte for byte as the lesson has it.

use std::ops::Range;

use anyhow::{bail, Context, Result};
use proc_macro2::LineColumn;
use syn::spanned::Spanned;

/// Which function: `NAME` (a free function), `TYPE::NAME` (an inherent
/// method) or `TRAIT for TYPE::NAME` (a trait method), in `file`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FnPath {
    /// The file, relative to the crate's `src/`.
    pub file: String,
    /// The trait of the `impl`, for a trait method.
    pub trait_name: Option<String>,
    /// The type of the `impl`, for a method.
    pub type_name: Option<String>,
    /// The function's name.
    pub name: String,
}

impl FnPath {
    /// Parses `FILE: PATH`.
    pub fn parse(spec: &str) -> Result<FnPath> {
        let Some((file, path)) = spec.split_once(": ") else {
            bail!("{spec:?}: expected FILE: NAME, FILE: TYPE::NAME or FILE: TRAIT for TYPE::NAME");
        };
        let path = path.trim();
        let (owner, name) = match path.rsplit_once("::") {
            Some((owner, name)) => (Some(owner), name),
            None => (None, path),
        };
        let (trait_name, type_name) = match owner.map(|o| o.split_once(" for ")) {
            None => (None, None),
            Some(None) => (None, owner),
            Some(Some((t, ty))) => (Some(t), Some(ty)),
        };
        let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_');
        if !ident(name) || !type_name.is_none_or(ident) || !trait_name.is_none_or(ident) {
            bail!("{spec:?}: names are plain identifiers (no generics, no paths)");
        }
        Ok(FnPath {
            file: file.trim().to_string(),
            trait_name: trait_name.map(str::to_string),
            type_name: type_name.map(str::to_string),
            name: name.to_string(),
        })
    }
}

impl std::fmt::Display for FnPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: ", self.file)?;
        if let Some(t) = &self.trait_name {
            write!(f, "{t} for ")?;
        }
        if let Some(ty) = &self.type_name {
            write!(f, "{ty}::")?;
        }
        f.write_str(&self.name)
    }
}

/// A function found in a file: where it is, and what its body must become.
#[derive(Debug, Clone)]
pub struct FoundFn {
    /// The whole item, from its first attribute or doc line to its `}`.
    pub item: Range<usize>,
    /// The body, braces included.
    pub body: Range<usize>,
    /// How far the function's `}` is indented.
    pub indent: usize,
    /// Whether the body must be an `async move` block: a function returning
    /// `impl Future` that is not an `async fn` (`todo!()` alone is not a
    /// future).
    pub returns_future: bool,
    /// Whether it is a `Drop::drop`: its blank must not panic while a panic
    /// unwinds (see [`blank_body`]).
    pub is_drop: bool,
}

/// Finds the function `path` names in `text`, exactly once.
pub fn find(text: &str, path: &FnPath) -> Result<FoundFn> {
    let file = syn::parse_file(text).with_context(|| format!("parse {}", path.file))?;
    let mut found = Vec::new();
    for item in &file.items {
        match item {
            syn::Item::Fn(f) if path.type_name.is_none() && f.sig.ident == path.name => {
                found.push(located(text, f.span(), &f.sig, &f.block)?);
            }
            syn::Item::Impl(imp) if path.type_name.is_some() => {
                let trait_matches = match (&imp.trait_, &path.trait_name) {
                    (None, None) => true,
                    (Some((_, t, _)), Some(name)) => last_ident(t).is_some_and(|i| &i == name),
                    _ => false,
                };
                let type_matches = match &*imp.self_ty {
                    syn::Type::Path(p) => {
                        last_ident(&p.path).is_some_and(|i| Some(&i) == path.type_name.as_ref())
                    }
                    _ => false,
                };
                if !(trait_matches && type_matches) {
                    continue;
                }
                for member in &imp.items {
                    if let syn::ImplItem::Fn(f) = member {
                        if f.sig.ident == path.name {
                            found.push(located(text, f.span(), &f.sig, &f.block)?);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    match found.len() {
        1 => {
            let mut found = found.remove(0);
            found.is_drop = path.trait_name.as_deref() == Some("Drop") && path.name == "drop";
            Ok(found)
        }
        0 => bail!("{path}: no such function"),
        n => bail!("{path}: {n} functions match; name the impl's trait"),
    }
}

fn last_ident(path: &syn::Path) -> Option<String> {
    path.segments.last().map(|s| s.ident.to_string())
}

fn located(
    text: &str,
    item: proc_macro2::Span,
    sig: &syn::Signature,
    block: &syn::Block,
) -> Result<FoundFn> {
    let open = offset(text, block.brace_token.span.open().start())?;
    let close_at = block.brace_token.span.close().start();
    let close = offset(text, close_at)?;
    let returns_future = sig.asyncness.is_none()
        && match &sig.output {
            syn::ReturnType::Type(_, ty) => match &**ty {
                syn::Type::ImplTrait(t) => t.bounds.iter().any(|b| match b {
                    syn::TypeParamBound::Trait(t) => {
                        last_ident(&t.path).is_some_and(|i| i == "Future")
                    }
                    _ => false,
                }),
                _ => false,
            },
            _ => false,
        };
    if !returns_future {
        if let syn::ReturnType::Type(_, ty) = &sig.output {
            if matches!(&**ty, syn::Type::ImplTrait(_)) {
                bail!(
                    "{}: returns an `impl Trait` other than a Future; blank its callers instead",
                    sig.ident
                );
            }
        }
    }
    // The item starts at its first attribute (doc comments are attributes).
    let start = offset(text, item.start())?;
    Ok(FoundFn {
        item: start..close + 1,
        body: open..close + 1,
        indent: close_at.column,
        returns_future,
        is_drop: false,
    })
}

/// The byte offset of a line and (character) column.
fn offset(text: &str, at: LineColumn) -> Result<usize> {
    let line_start = text
        .split_inclusive('\n')
        .take(at.line.saturating_sub(1))
        .map(str::len)
        .sum::<usize>();
    let line = &text[line_start..];
    let column = line
        .char_indices()
        .nth(at.column)
        .map(|(i, _)| i)
        .unwrap_or(line.len());
    if at.line == 0 || line_start > text.len() {
        bail!("a span outside the file (line {})", at.line);
    }
    Ok(line_start + column)
}

/// The text that replaces a body: a `todo!` saying `message`.
///
/// A `Drop::drop` also runs while a panic unwinds (a failing assertion, a
/// `todo!()` elsewhere), and a second panic there aborts the whole test
/// binary: no test result, only "panic in a destructor during cleanup". So
/// a blank `drop` panics only when no panic is under way; during one it
/// does nothing, and the test fails with the first panic's message.
pub fn blank_body(found: &FoundFn, message: &str) -> String {
    // `todo!` formats its argument: braces would be format placeholders.
    let literal = format!("{:?}", message.replace('{', "{{").replace('}', "}}"));
    let pad = " ".repeat(found.indent);
    if found.is_drop {
        return format!(
            "{{\n{pad}    // Replace this whole body with yours: a `drop` runs on every path,\n\
             {pad}    // a panic's unwinding included, and yours must do its work then too.\n\
             {pad}    // (The placeholder stays quiet while a panic unwinds only because a\n\
             {pad}    // second panic there would abort the whole test binary.)\n\
             {pad}    if !::std::thread::panicking() {{\n\
             {pad}        todo!({literal})\n\
             {pad}    }}\n{pad}}}"
        );
    }
    if found.returns_future {
        format!("{{\n{pad}    async move {{ todo!({literal}) }}\n{pad}}}")
    } else {
        format!("{{\n{pad}    todo!({literal})\n{pad}}}")
    }
}

/// `text` with each `(path, message)` function's body blanked.
pub fn blank_all(text: &str, blanks: &[(FnPath, String)]) -> Result<String> {
    let mut edits = Vec::new();
    for (path, message) in blanks {
        let found = find(text, path)?;
        edits.push((found.body.clone(), blank_body(&found, message)));
    }
    Ok(splice(text, edits))
}

/// `text` with each byte range replaced (ranges that do not overlap), the
/// last first, so that the earlier ranges stay where they were.
fn splice(text: &str, mut edits: Vec<(Range<usize>, String)>) -> String {
    edits.sort_by_key(|(range, _)| std::cmp::Reverse(range.start));
    let mut out = text.to_string();
    for (range, replacement) in edits {
        out.replace_range(range, &replacement);
    }
    out
}

/// A struct whose fields the learner designs: `FILE: NAME`, a struct with
/// named fields at the top level of FILE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructPath {
    /// The file, relative to the crate's `src/`.
    pub file: String,
    /// The struct's name.
    pub name: String,
}

impl StructPath {
    /// Parses `FILE: NAME`.
    pub fn parse(spec: &str) -> Result<StructPath> {
        let Some((file, name)) = spec.split_once(": ") else {
            bail!("{spec:?}: expected FILE: NAME (a struct)");
        };
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
            bail!("{spec:?}: a struct is named by a plain identifier");
        }
        Ok(StructPath {
            file: file.trim().to_string(),
            name: name.to_string(),
        })
    }
}

impl std::fmt::Display for StructPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file, self.name)
    }
}

/// A struct found in a file: where its fields are.
#[derive(Debug, Clone)]
pub struct FoundStruct {
    /// The fields, braces included.
    pub body: Range<usize>,
    /// How far the struct's `}` is indented.
    pub indent: usize,
    /// Its lifetimes and type parameters, which the placeholder must use
    /// (a parameter no field uses is an error).
    pub params: Vec<String>,
}

/// Finds the struct `path` names in `text`: one with named fields.
pub fn find_struct(text: &str, path: &StructPath) -> Result<FoundStruct> {
    let file = syn::parse_file(text).with_context(|| format!("parse {}", path.file))?;
    let found: Vec<&syn::ItemStruct> = file
        .items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Struct(s) if s.ident == path.name => Some(s),
            _ => None,
        })
        .collect();
    let [item] = found[..] else {
        bail!("{path}: no such struct at the top of the file");
    };
    let syn::Fields::Named(fields) = &item.fields else {
        bail!("{path}: only a struct with named fields can be left to design");
    };
    let open = offset(text, fields.brace_token.span.open().start())?;
    let close_at = fields.brace_token.span.close().start();
    let close = offset(text, close_at)?;
    let params = item
        .generics
        .params
        .iter()
        .filter_map(|p| match p {
            syn::GenericParam::Lifetime(l) => Some(format!("&{} ()", l.lifetime)),
            syn::GenericParam::Type(t) => Some(t.ident.to_string()),
            syn::GenericParam::Const(_) => None,
        })
        .collect();
    Ok(FoundStruct {
        body: open..close + 1,
        indent: close_at.column,
        params,
    })
}

/// The text that replaces a struct's fields: a comment saying `message`
/// where the learner's fields go (and, for a generic struct, a marker
/// that uses its parameters until a field of theirs does).
pub fn blank_fields(found: &FoundStruct, message: &str) -> String {
    let pad = " ".repeat(found.indent);
    let mut out = String::from("{\n");
    for line in wrap(message, 72) {
        out.push_str(&format!("{pad}    // {line}\n"));
    }
    if !found.params.is_empty() {
        out.push_str(&format!(
            "{pad}    // (`_yours` only uses the parameters, for the compiler: remove it once a field of yours does.)\n"
        ));
        out.push_str(&format!(
            "{pad}    _yours: std::marker::PhantomData<fn() -> ({},)>,\n",
            found.params.join(", ")
        ));
    }
    out.push_str(&format!("{pad}}}"));
    out
}

/// `text` cut into lines of at most `width` characters, at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().expect("one line at least");
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(word.to_string());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines
}

/// `text` with the fields of each `(path, message)` struct left to design.
pub fn blank_structs(text: &str, structs: &[(StructPath, String)]) -> Result<String> {
    let mut edits = Vec::new();
    for (path, message) in structs {
        let found = find_struct(text, path)?;
        edits.push((found.body.clone(), blank_fields(&found, message)));
    }
    Ok(splice(text, edits))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"//! A module.

/// Adds.
pub fn add(a: u32, b: u32) -> u32 {
    // The sum.
    a + b
}

struct Counter(u32);

impl Counter {
    /// One more.
    fn bump(&mut self) -> u32 {
        self.0 += 1; // counted
        self.0
    }

    fn later<'a>(&'a self) -> impl std::future::Future<Output = u32> + 'a {
        async move { self.0 }
    }
}

impl Iterator for Counter {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        Some(self.bump())
    }
}

impl Drop for Counter {
    fn drop(&mut self) {}
}
"#;

    fn path(spec: &str) -> FnPath {
        FnPath::parse(spec).expect(spec)
    }

    #[test]
    fn paths_parse_in_their_three_forms_and_refuse_generics() {
        assert_eq!(path("a.rs: add").type_name, None);
        let method = path("a.rs: Counter::bump");
        assert_eq!(
            (method.type_name.as_deref(), method.trait_name.as_deref()),
            (Some("Counter"), None)
        );
        let trait_method = path("sub/b.rs: Iterator for Counter::next");
        assert_eq!(trait_method.file, "sub/b.rs");
        assert_eq!(trait_method.trait_name.as_deref(), Some("Iterator"));
        assert_eq!(
            trait_method.to_string(),
            "sub/b.rs: Iterator for Counter::next"
        );
        let drop = FnPath::parse("a.rs: Drop for Counter::drop").unwrap();
        let found = find(SAMPLE, &drop).unwrap();
        assert!(found.is_drop, "a Drop's drop is known as one");
        let blank = blank_body(&found, "stage 2: the guard");
        assert!(
            blank.contains("if !::std::thread::panicking() {") && blank.contains("todo!(\"stage 2"),
            "a blank drop panics only when no panic unwinds: {blank}"
        );
        assert!(
            !find(SAMPLE, &path("a.rs: Iterator for Counter::next"))
                .unwrap()
                .is_drop
        );
        assert!(FnPath::parse("a.rs: Counter<T>::bump").is_err());
        assert!(FnPath::parse("add").is_err(), "no file");
    }

    #[test]
    fn a_blank_replaces_only_the_body_and_keeps_every_comment_around_it() {
        let out = blank_all(
            SAMPLE,
            &[
                (path("a.rs: add"), "stage 1: add them".into()),
                (path("a.rs: Counter::bump"), "stage 2: {count}".into()),
            ],
        )
        .unwrap();
        assert!(out.contains(
            "/// Adds.\npub fn add(a: u32, b: u32) -> u32 {\n    todo!(\"stage 1: add them\")\n}"
        ));
        // Indented as the method is; braces escaped for `todo!`'s format.
        assert!(out.contains(
            "    fn bump(&mut self) -> u32 {\n        todo!(\"stage 2: {{count}}\")\n    }"
        ));
        assert!(!out.contains("// The sum.") && !out.contains("// counted"));
        // Everything outside the two bodies is as it was.
        let outside = |text: &str| {
            text.lines()
                .filter(|l| l.starts_with("//") || l.starts_with("impl") || l.contains("///"))
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(outside(&out), outside(SAMPLE));
        syn::parse_file(&out).expect("the blanked file still parses");
    }

    #[test]
    fn a_function_returning_a_future_gets_an_async_block() {
        let out = blank_all(SAMPLE, &[(path("a.rs: Counter::later"), "stage 3".into())]).unwrap();
        assert!(out.contains("async move { todo!(\"stage 3\") }"), "{out}");
    }

    #[test]
    fn a_trait_method_is_found_by_its_trait_and_a_missing_one_is_an_error() {
        let found = find(SAMPLE, &path("a.rs: Iterator for Counter::next")).unwrap();
        assert!(SAMPLE[found.body.clone()].contains("self.bump()"));
        let err = find(SAMPLE, &path("a.rs: Counter::next")).unwrap_err();
        assert!(err.to_string().contains("no such function"), "{err}");
        assert!(find(SAMPLE, &path("a.rs: missing")).is_err());
    }

    #[test]
    fn an_impl_trait_that_is_not_a_future_is_refused() {
        let text = "fn make() -> impl Fn() { || () }\n";
        let err = find(text, &path("a.rs: make")).unwrap_err();
        assert!(err.to_string().contains("impl Trait"), "{err}");
    }

    #[test]
    fn a_structs_fields_are_left_to_design_with_a_marker_for_its_parameters() {
        let text = "/// Kept.\nstruct Plain {\n    /// Gone.\n    count: u32,\n}\n\n\
                    pub struct Generic<'a, T> {\n    items: Vec<&'a T>,\n}\n\nstruct Tuple(u32);\n";
        let plain = StructPath::parse("a.rs: Plain").unwrap();
        let generic = StructPath::parse("a.rs: Generic").unwrap();
        let out = blank_structs(
            text,
            &[
                (plain, "stage 2: your fields.".into()),
                (generic, "stage 3: yours too.".into()),
            ],
        )
        .unwrap();
        assert!(
            out.contains("/// Kept.\nstruct Plain {\n    // stage 2: your fields.\n}"),
            "{out}"
        );
        assert!(!out.contains("count") && !out.contains("Gone"), "{out}");
        assert!(
            out.contains("    _yours: std::marker::PhantomData<fn() -> (&'a (), T,)>,\n}"),
            "{out}"
        );
        syn::parse_file(&out).expect("the file still parses");
        let tuple = StructPath::parse("a.rs: Tuple").unwrap();
        let err = find_struct(text, &tuple).unwrap_err();
        assert!(err.to_string().contains("named fields"), "{err}");
        assert!(find_struct(text, &StructPath::parse("a.rs: Missing").unwrap()).is_err());
    }
}
