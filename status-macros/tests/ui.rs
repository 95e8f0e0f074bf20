//! Compile-time behaviour of the macros: what compiles, and the errors of what does not.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/dependency/pass/*.rs");
    t.compile_fail("tests/dependency/fail/*.rs");
    t.pass("tests/feature/pass/*.rs");
    t.compile_fail("tests/feature/fail/*.rs");
    t.pass("tests/group/pass/*.rs");
    t.compile_fail("tests/group/fail/*.rs");
}
