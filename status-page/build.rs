//! Finds the status page's languages: each `web/locales/<tag>/statuspage.ftl` is compiled in,
//! so that a translator adds a language with a file and no code.

use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../web/locales");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut locales: Vec<(String, String)> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|e| {
                    let tag = e.file_name().into_string().ok()?;
                    let file = e.path().join("statuspage.ftl");
                    println!("cargo:rerun-if-changed={}", file.display());
                    file.is_file().then(|| (tag, file.display().to_string()))
                })
                .collect()
        })
        .unwrap_or_default();
    locales.sort();
    let mut out = String::from(
        "/// Each language of the status page: its tag, its cache key, its Fluent source.\n\
         pub(crate) const LOCALES: &[(&str, &str, &str)] = &[\n",
    );
    for (tag, file) in &locales {
        out.push_str(&format!(
            "    ({tag:?}, \"page:{tag}\", include_str!({file:?})),\n"
        ));
    }
    out.push_str("];\n");
    let target =
        Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("locales.rs");
    std::fs::write(target, out).expect("OUT_DIR is writable");
}
