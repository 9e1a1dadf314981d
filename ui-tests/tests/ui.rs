//! Runs every compile-fail case and every must-compile program.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tensor/*.rs");
    t.compile_fail("model/*.rs");
    t.compile_fail("module/*.rs");
    t.compile_fail("kernel/*.rs");
    t.compile_fail("graph/*.rs");
    t.pass("pass/*.rs");
}
