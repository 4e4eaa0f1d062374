#[test]
fn test_add() {
    assert_eq!(calc::add(2.0, 3.0), 5.0);
}

#[test]
fn test_sub() {
    assert_eq!(calc::sub(5.0, 3.0), 2.0);
}

#[test]
fn test_mul() {
    assert_eq!(calc::mul(4.0, 3.0), 12.0);
}
