use serde::Serialize;

/// A 1-based line and column; the column counts Unicode scalar values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LineCol {
    pub line: usize,
    pub column: usize,
}

/// Maps byte offsets of one text to line/column positions.
///
/// Columns here count characters (Unicode scalar values), which is what
/// terminals, SARIF (`columnKind: unicodeCodePoints`) and GitHub annotations
/// expect. The language server converts to UTF-16 itself.
#[derive(Debug, Clone)]
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { starts }
    }

    /// 0-based line number of a byte offset.
    pub fn line_of(&self, offset: usize) -> usize {
        match self.starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        }
    }

    pub fn line_start(&self, line: usize) -> usize {
        self.starts.get(line).copied().unwrap_or(usize::MAX)
    }

    pub fn line_count(&self) -> usize {
        self.starts.len()
    }

    /// 1-based line and character column of a byte offset (clamped to the
    /// text, and to a character boundary).
    pub fn line_col(&self, text: &str, offset: usize) -> LineCol {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.line_of(offset);
        let start = self.starts[line];
        let column = text[start..offset].chars().filter(|&c| c != '\r').count() + 1;
        LineCol {
            line: line + 1,
            column,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns() {
        let text = "ab\né€x\r\nz";
        let idx = LineIndex::new(text);
        assert_eq!(idx.line_col(text, 0), LineCol { line: 1, column: 1 });
        assert_eq!(idx.line_col(text, 3), LineCol { line: 2, column: 1 });
        // 'x' comes after two multi-byte characters
        let x = text.find('x').unwrap();
        assert_eq!(idx.line_col(text, x), LineCol { line: 2, column: 3 });
        let z = text.find('z').unwrap();
        assert_eq!(idx.line_col(text, z), LineCol { line: 3, column: 1 });
        // past the end and inside a character are clamped
        assert_eq!(idx.line_col(text, 999).line, 3);
        assert_eq!(idx.line_col(text, 4), LineCol { line: 2, column: 1 });
    }
}
