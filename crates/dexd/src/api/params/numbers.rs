//! The form of a JSON number a whole-number parameter takes: JSON (and JSON Schema's
//! `integer`) counts `22976.0` and `2.5e3` as integers, so they are read as such. Nothing here
//! knows a parameter; `Params` calls it for a field given as a JSON number.

/// The decimal digits of a JSON number that is a whole number, whatever its form: JSON (and JSON
/// Schema's `integer`) counts `22976.0` and `2.5e3` as the integers 22976 and 2500. `None` for a
/// number with a fraction, a sign, or an exponent beyond what any parameter could hold.
pub(super) fn integral_digits(number: &str) -> Option<String> {
    if number.bytes().all(|byte| byte.is_ascii_digit()) {
        return Some(number.to_string());
    }
    let (mantissa, exponent) = match number.find(['e', 'E']) {
        Some(index) => (&number[..index], number[index + 1..].parse::<i32>().ok()?),
        None => (number, 0),
    };
    if !(-100..=100).contains(&exponent) {
        return None;
    }
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if whole.is_empty() || !whole.bytes().chain(fraction.bytes()).all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    let digits = format!("{whole}{fraction}");
    let point = i64::try_from(whole.len()).ok()? + i64::from(exponent);
    let point = usize::try_from(point.max(0)).ok()?;
    let (integer, rest) = if point >= digits.len() {
        (format!("{digits}{}", "0".repeat(point - digits.len())), "")
    } else {
        (digits[..point].to_string(), &digits[point..])
    };
    if !rest.bytes().all(|byte| byte == b'0') {
        return None;
    }
    let trimmed = integer.trim_start_matches('0');
    Some(if trimmed.is_empty() {
        "0".to_string()
    } else {
        trimmed.to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::integral_digits;

    #[test]
    fn json_numbers_that_are_whole_are_integers() {
        assert_eq!(integral_digits("22976").as_deref(), Some("22976"));
        assert_eq!(integral_digits("22976.0").as_deref(), Some("22976"));
        assert_eq!(integral_digits("510509.000").as_deref(), Some("510509"));
        assert_eq!(integral_digits("2.5e3").as_deref(), Some("2500"));
        assert_eq!(integral_digits("1E2").as_deref(), Some("100"));
        assert_eq!(integral_digits("0.0").as_deref(), Some("0"));
        assert_eq!(integral_digits("1.5"), None);
        assert_eq!(integral_digits("1.5e0"), None);
        assert_eq!(integral_digits("-1"), None);
        assert_eq!(integral_digits("-1.0"), None);
        assert_eq!(integral_digits("1e-1"), None);
        assert_eq!(integral_digits("1e400"), None);
    }
}
