//! Byte offsets ↔ LSP positions, in the negotiated encoding (UTF-8 or
//! UTF-16), with CRLF line endings handled: a position never lands between
//! `\r` and `\n`, nor inside a character.

use line_index::{LineCol, LineIndex, TextSize, WideEncoding, WideLineCol};
use lsp_types::{Position, Range};

use dpplan_ide::Span;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
}

/// A text with its line index.
pub struct Lines<'a> {
    pub text: &'a str,
    pub index: &'a LineIndex,
    pub encoding: Encoding,
}

impl Lines<'_> {
    fn line_start(&self, line: u32) -> Option<usize> {
        self.index.offset(LineCol { line, col: 0 }).map(usize::from)
    }

    /// The end of a line's content (before `\r\n` or `\n`).
    fn line_content_end(&self, line: u32) -> usize {
        match self.line_start(line + 1) {
            Some(next) => {
                let nl = next - 1;
                if nl > 0 && self.text.as_bytes()[nl - 1] == b'\r' {
                    nl - 1
                } else {
                    nl
                }
            }
            None => self.text.len(),
        }
    }

    /// The byte offset of a position, clamped to the text, to its line's
    /// content and to a character boundary.
    pub fn offset(&self, pos: Position) -> usize {
        let Some(start) = self.line_start(pos.line) else {
            return self.text.len();
        };
        let end = self.line_content_end(pos.line).max(start);
        let col = match self.encoding {
            Encoding::Utf8 => pos.character,
            Encoding::Utf16 => self
                .index
                .to_utf8(
                    WideEncoding::Utf16,
                    WideLineCol {
                        line: pos.line,
                        col: pos.character,
                    },
                )
                .map_or(u32::MAX, |lc| lc.col),
        };
        let mut off = start.saturating_add(col as usize).min(end);
        while off > start && !self.text.is_char_boundary(off) {
            off -= 1;
        }
        off
    }

    pub fn position(&self, offset: usize) -> Position {
        let mut off = offset.min(self.text.len());
        while off > 0 && !self.text.is_char_boundary(off) {
            off -= 1;
        }
        let bytes = self.text.as_bytes();
        if off > 0 && off < bytes.len() && bytes[off] == b'\n' && bytes[off - 1] == b'\r' {
            off -= 1;
        }
        let lc = self.index.line_col(TextSize::from(off as u32));
        let character = match self.encoding {
            Encoding::Utf8 => lc.col,
            Encoding::Utf16 => self
                .index
                .to_wide(WideEncoding::Utf16, lc)
                .map_or(lc.col, |w| w.col),
        };
        Position {
            line: lc.line,
            character,
        }
    }

    pub fn range(&self, span: Span) -> Range {
        Range {
            start: self.position(span.start),
            end: self.position(span.end.max(span.start)),
        }
    }

    pub fn span(&self, range: Range) -> Span {
        let a = self.offset(range.start);
        let b = self.offset(range.end);
        Span::new(a.min(b), a.max(b))
    }

    /// Length of `text[start..end]` in the encoding's units.
    pub fn width(&self, start: usize, end: usize) -> u32 {
        let s = &self.text[start..end];
        match self.encoding {
            Encoding::Utf8 => s.len() as u32,
            Encoding::Utf16 => s.encode_utf16().count() as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_crlf_and_clamping() {
        let text = "a😀b\r\n漢字x\r\nlast";
        let index = LineIndex::new(text);
        let l = Lines {
            text,
            index: &index,
            encoding: Encoding::Utf16,
        };
        let b = text.find('b').unwrap();
        assert_eq!(
            l.position(b),
            Position {
                line: 0,
                character: 3
            }
        );
        assert_eq!(
            l.offset(Position {
                line: 0,
                character: 3
            }),
            b
        );
        // inside the surrogate pair: clamped to the character's start
        assert_eq!(
            l.offset(Position {
                line: 0,
                character: 2
            }),
            1
        );
        // past the end of the line: before the \r
        assert_eq!(
            l.offset(Position {
                line: 0,
                character: 99
            }),
            b + 1
        );
        // the \n of a CRLF maps to the end of the line's content
        assert_eq!(
            l.position(b + 2),
            Position {
                line: 0,
                character: 4
            }
        );
        let x = text.find('x').unwrap();
        assert_eq!(
            l.position(x),
            Position {
                line: 1,
                character: 2
            }
        );
        assert_eq!(
            l.offset(Position {
                line: 1,
                character: 2
            }),
            x
        );
        assert_eq!(
            l.offset(Position {
                line: 9,
                character: 0
            }),
            text.len()
        );
        let l8 = Lines {
            text,
            index: &index,
            encoding: Encoding::Utf8,
        };
        assert_eq!(
            l8.position(x),
            Position {
                line: 1,
                character: 6
            }
        );
        assert_eq!(
            l8.offset(Position {
                line: 1,
                character: 6
            }),
            x
        );
        assert_eq!(
            l8.offset(Position {
                line: 1,
                character: 4
            }),
            x - 3
        );
    }
}
