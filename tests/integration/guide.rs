//! The guide's chapters are all compiled as doc tests: every file that
//! `docs/src/SUMMARY.md` links to is listed in the facade's `guide` module.

use std::fs;

#[test]
fn every_chapter_of_the_guide_is_tested() {
    let root = env!("CARGO_MANIFEST_DIR");
    let summary = fs::read_to_string(format!("{root}/docs/src/SUMMARY.md")).expect("docs/src/SUMMARY.md");
    let facade = fs::read_to_string(format!("{root}/src/lib.rs")).expect("src/lib.rs");
    let chapters: Vec<&str> = summary
        .split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .filter(|file| file.ends_with(".md"))
        .collect();
    assert!(chapters.len() >= 10, "SUMMARY.md links {} chapters", chapters.len());
    for file in chapters {
        assert!(
            fs::metadata(format!("{root}/docs/src/{file}")).is_ok(),
            "SUMMARY.md links {file}, which is not in docs/src"
        );
        assert!(facade.contains(&format!("\"{file}\"")), "{file} is in SUMMARY.md but not in src/lib.rs's `chapters!`");
    }
}
