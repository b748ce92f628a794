//! Text taken from a report, made safe to display: characters that are invisible or that change
//! how the text around them displays are written as `\u` and four lower-case hex digits.
//!
//! Every renderer passes such strings through [`display_text`], and so does a validation
//! problem's message ([`crate::problem`]), which is why it lives here, below them all.

use std::borrow::Cow;

/// Whether `c` is shown escaped: every C0 control character (U+0000 to U+001F, tab and line feed
/// included), DEL (U+007F), every C1 control character (U+0080 to U+009F), the bidirectional
/// formatting characters (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069) and the
/// line and paragraph separators (U+2028, U+2029).
pub fn is_escaped_for_display(c: char) -> bool {
    matches!(
        c,
        '\u{0}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{61c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
    )
}

/// Whether some character of `text` is escaped for display; printable ASCII text, the common
/// case, is told by a quick byte check.
pub(crate) fn needs_escaping(text: &str) -> bool {
    !text.bytes().all(|byte| (0x20..0x7f).contains(&byte)) && text.contains(is_escaped_for_display)
}

/// `text` with every character of [`is_escaped_for_display`] written as `\u` and four lower-case
/// hex digits (`a\u202eb`); borrowed when there is none, which is the common case.
pub fn display_text(text: &str) -> Cow<'_, str> {
    if !needs_escaping(text) {
        return Cow::Borrowed(text);
    }
    let Some(first) = text.find(is_escaped_for_display) else {
        return Cow::Borrowed(text);
    };
    let mut shown = String::with_capacity(text.len() + 12);
    shown.push_str(&text[..first]);
    for c in text[first..].chars() {
        if is_escaped_for_display(c) {
            // Every escaped character is below U+10000: four digits always suffice.
            shown.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            shown.push(c);
        }
    }
    Cow::Owned(shown)
}
