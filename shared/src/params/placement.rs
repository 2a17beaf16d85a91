//! Where a quoting form stands in a script: `${name:shell}` in a SHELL
//! script and `${name:python}` in a PYTHON script write one complete word
//! or string literal (`'it'\''s'`, `"it's"`), which is safe only where the
//! language reads a new word or expression: in the script's code. Inside an
//! open string the quotes it writes close that string instead, and the value
//! becomes code (`echo "v=${p:shell}"` with `p` = `x"; touch /tmp/PWNED; echo "`);
//! inside a comment or a here-document a line break in the value ends them.
//! So a form must stand alone, and this module finds the ones that do not
//! (docs/SECURITY.md, "Parameters from outside the DAG file").
//!
//! Each language gets a small lexer that follows just enough of its syntax
//! to know whether a point of the text is code: quotes, escapes, comments,
//! substitutions, here-documents (bash), string prefixes and f-string fields
//! (Python). Where it cannot follow the text (a `case` inside `$(…)`, whose
//! `)` patterns it cannot tell from the end of the substitution), every
//! form after that point is refused: the rule errs toward refusal, never
//! toward acceptance.
//!
//! The text is given as [`Segment`]s: the script's own text, the values of
//! other placeholders (their text when known, at run time; an opaque word
//! when not, at apply), and the quoting forms to judge.

use std::collections::VecDeque;
use std::fmt;

use super::{Piece, ScriptLang, env_name, is_name, pieces};

/// One stretch of a script, in order.
#[derive(Debug, Clone, Copy)]
pub(super) enum Segment<'a> {
    /// Text the interpreter reads as written: the script's own, or a value
    /// substituted into it.
    Code(&'a str),
    /// A value not known yet: lexed as one word of plain characters.
    Opaque,
    /// A quoting form to judge.
    Form {
        /// The parameter's name.
        name: &'a str,
        /// The line of the script it is on, from 1.
        line: usize,
    },
}

/// A quoting form that does not stand alone in the script's code. Its
/// message names the form, where it stands and what to write instead; it
/// never holds the parameter's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Misplaced {
    /// The parameter's name.
    pub name: String,
    /// The script's language: which form it is.
    pub lang: ScriptLang,
    /// The line of the script, from 1.
    pub line: usize,
    /// Where it stands.
    pub place: Place,
}

/// Where a misplaced quoting form stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// bash `'…'`.
    SingleQuoted,
    /// bash `"…"` or `$"…"`.
    DoubleQuoted,
    /// bash `$'…'`.
    AnsiC,
    /// bash `` `…` ``, anywhere inside one.
    Backticks,
    /// bash `${…}` (written `$${…}` in a DAG file).
    Expansion,
    /// bash `((…))`, `$((…))` or `$[…]`.
    Arithmetic,
    /// A comment.
    Comment,
    /// A bash here-document's body.
    HereDoc,
    /// A bash here-document's delimiter word.
    HereDocDelimiter,
    /// Right after a `\`, which would escape its opening quote.
    Escaped,
    /// A Python string literal (any prefix, quote and length).
    PythonString,
    /// A Python f-string, its replacement fields included.
    FString,
    /// Right after a Python name or number: `f${p:python}` would make an
    /// f-string.
    JoinsWord,
    /// After something the lexer cannot follow.
    Unsure(Unsure),
}

/// What the lexer could not follow, after which every form is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsure {
    /// A `case` inside `$(…)`: its `pattern)` cannot be told from the `)`
    /// that ends the substitution.
    CaseInSubstitution,
    /// A quote inside `${…}` inside `"…"`: bash versions read it differently.
    QuoteInQuotedExpansion,
    /// A here-document whose delimiter is, or holds, a parameter.
    ParamDelimiter,
    /// A `<<` with no delimiter word after it.
    NoDelimiter,
    /// A Python string whose prefix is a parameter's value.
    ParamPrefix,
    /// A Python string left open at the end of its line.
    UnclosedString,
}

impl Place {
    fn describe(self) -> &'static str {
        match self {
            Place::SingleQuoted => "inside a single-quoted string '…'",
            Place::DoubleQuoted => "inside a double-quoted string \"…\"",
            Place::AnsiC => "inside a $'…' string",
            Place::Backticks => "inside a `…` command substitution",
            Place::Expansion => "inside a ${…} expansion",
            Place::Arithmetic => "inside an arithmetic expression ((…)), $((…)) or $[…]",
            Place::Comment => "inside a comment",
            Place::HereDoc => "inside a here-document",
            Place::HereDocDelimiter => "as a here-document's delimiter",
            Place::Escaped => "right after a backslash",
            Place::PythonString => "inside a string literal",
            Place::FString => "inside an f-string",
            Place::JoinsWord => "directly after a name or number",
            Place::Unsure(Unsure::CaseInSubstitution) => {
                "after a `case` inside $(…), whose ends this check cannot follow"
            }
            Place::Unsure(Unsure::QuoteInQuotedExpansion) => {
                "after a quote inside a ${…} expansion inside \"…\", which bash versions read differently"
            }
            Place::Unsure(Unsure::ParamDelimiter) => {
                "after a here-document whose delimiter is a parameter, whose end this check cannot find"
            }
            Place::Unsure(Unsure::NoDelimiter) => "after a `<<` with no delimiter",
            Place::Unsure(Unsure::ParamPrefix) => {
                "after a string whose prefix is a parameter, which this check cannot follow"
            }
            Place::Unsure(Unsure::UnclosedString) => "after a string left open at its line's end",
        }
    }
}

impl fmt::Display for Misplaced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = &self.name;
        let env = env_name(name);
        let (form, instead) = match self.lang {
            ScriptLang::Shell => (
                format!("${{{name}:shell}}"),
                match self.place {
                    Place::DoubleQuoted | Place::SingleQuoted | Place::AnsiC => format!(
                        "close the string before it and open it again after \
                         (\"value=[\"${{{name}:shell}}\"]\", not \"value=[${{{name}:shell}}]\"), \
                         or read the value from the environment inside the string \
                         (\"value=[$DJ_PARAM_{}]\")",
                        &env["DJ_PARAM_".len()..]
                    ),
                    Place::HereDoc => format!(
                        "in a here-document read the value from the environment instead \
                         (${env} in an unquoted one)"
                    ),
                    Place::Backticks => format!(
                        "write $(…) instead of `…`, or read the value from the environment \
                         (\"${env}\")"
                    ),
                    Place::Escaped => format!(
                        "remove the backslash, or read the value from the environment (\"${env}\")"
                    ),
                    _ => {
                        format!("move it out, or read the value from the environment (\"${env}\")")
                    }
                },
            ),
            ScriptLang::Python => (
                format!("${{{name}:python}}"),
                match self.place {
                    Place::PythonString | Place::FString => format!(
                        "close the string before it and join it \
                         ('v=' + ${{{name}:python}}, not 'v=${{{name}:python}}'), or read the \
                         value from the environment (os.environ[\"{env}\"])"
                    ),
                    Place::JoinsWord => format!(
                        "put a space or an operator before it, or read the value from the \
                         environment (os.environ[\"{env}\"])"
                    ),
                    _ => format!(
                        "move it out, or read the value from the environment \
                         (os.environ[\"{env}\"])"
                    ),
                },
            ),
        };
        write!(
            f,
            "{form} stands {} (line {}); a quoting form must stand alone in the script's code, \
             outside quotes, comments and here-documents, since the quotes it writes would \
             close the ones around it: {instead}",
            self.place.describe(),
            self.line
        )
    }
}

/// The quoting form a `${body}` is in a script of `lang`, if it is one:
/// its parameter's name.
pub(super) fn quoting_form(body: &str, lang: ScriptLang) -> Option<&str> {
    let (name, modifier) = body.split_once(':')?;
    let fits = match lang {
        ScriptLang::Shell => modifier == "shell",
        ScriptLang::Python => modifier == "python",
    };
    (fits && is_name(name) && name != "secret").then_some(name)
}

/// Every quoting form of `lang` in a script's text (as written in the DAG
/// file) that does not stand alone in its code. Other placeholders are
/// opaque words; a placeholder that does not parse ends the check (it is an
/// error of its own when the script runs).
pub fn misplaced_forms(text: &str, lang: ScriptLang) -> Vec<Misplaced> {
    let mut segments = Vec::new();
    let mut line = 1;
    for piece in pieces(text) {
        match piece {
            Ok(Piece::Literal(literal)) => {
                segments.push(Segment::Code(literal));
                line += literal.matches('\n').count();
            }
            Ok(Piece::Param(body)) => segments.push(match quoting_form(body, lang) {
                Some(name) => Segment::Form { name, line },
                None => Segment::Opaque,
            }),
            Ok(Piece::DateExpr(_)) => segments.push(Segment::Opaque),
            Err(_) => break,
        }
    }
    judge(&segments, lang, false)
}

/// The misplaced forms among `segments`; only the first when `first_only`.
pub(super) fn judge(
    segments: &[Segment<'_>],
    lang: ScriptLang,
    first_only: bool,
) -> Vec<Misplaced> {
    let mut lexer: Box<dyn Lexer> = match lang {
        ScriptLang::Shell => Box::new(Bash::new()),
        ScriptLang::Python => Box::new(Python::new()),
    };
    let mut found = Vec::new();
    let mut code = String::new();
    for segment in segments {
        match *segment {
            // Adjacent stretches of code are lexed as one, so that `$` and
            // `(` from two pieces are read as `$(`.
            Segment::Code(text) => code.push_str(text),
            Segment::Opaque => {
                lexer.code(&code);
                code.clear();
                lexer.opaque();
            }
            Segment::Form { name, line } => {
                lexer.code(&code);
                code.clear();
                if let Some(place) = lexer.form() {
                    found.push(Misplaced {
                        name: name.to_owned(),
                        lang,
                        line,
                        place,
                    });
                    if first_only {
                        break;
                    }
                }
            }
        }
    }
    found
}

/// A language's lexer, fed the script in order.
trait Lexer {
    /// Reads a stretch of code.
    fn code(&mut self, text: &str);
    /// Reads a word of unknown plain characters.
    fn opaque(&mut self);
    /// Judges a quoting form here (`None`: it stands in code), then reads it
    /// as the quoted word or string it writes.
    fn form(&mut self) -> Option<Place>;
}

// ---------------------------------------------------------------- bash ----

/// A bash syntax context, innermost last on the stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sh {
    /// The script's code.
    Top,
    /// `$( … )`: code, with the count of `(` opened inside and not closed.
    Sub(u32),
    /// `'…'`.
    Single,
    /// `$'…'`.
    AnsiC,
    /// `"…"`.
    Double,
    /// `` `…` ``: ends at the first unescaped backtick, quotes or not.
    Backtick,
    /// `${…}`: ends at the first `}` (bash does not count braces).
    Expansion,
    /// `((…))`, `$((…))` (closing `)`) or `$[…]` (closing `]`), with the
    /// count of open brackets.
    Arith(char, u32),
    /// `# …` to the end of the line.
    Comment,
    /// A here-document's body (see [`Bash::doc`]).
    HereDoc,
}

/// The here-document whose body is being read.
#[derive(Debug)]
struct Doc {
    delimiter: String,
    /// `<<-`: leading tabs are stripped before the comparison.
    strip_tabs: bool,
    /// The line so far.
    line: String,
    /// The line holds a value: it is not taken for the delimiter.
    valued: bool,
}

/// A here-document's delimiter word being read after `<<` / `<<-`.
#[derive(Debug, Default)]
struct Delimiter {
    strip_tabs: bool,
    word: String,
    /// Inside `'…'` or `"…"` within the word.
    quote: Option<char>,
    /// Whether the word holds a value (a parameter).
    valued: bool,
}

struct Bash {
    stack: Vec<Sh>,
    /// The last character read in code ends a word (or there is none), so
    /// `#` starts a comment and `case` is a keyword.
    word_start: bool,
    /// A `\` ended the last stretch of code.
    escape: bool,
    delimiter: Option<Delimiter>,
    /// The body being read, when [`Sh::HereDoc`] is on top.
    doc: Option<Doc>,
    /// Here-documents whose bodies start after the next line break in code.
    pending: VecDeque<(String, bool)>,
    unsure: Option<Unsure>,
}

impl Bash {
    fn new() -> Bash {
        Bash {
            stack: vec![Sh::Top],
            word_start: true,
            escape: false,
            delimiter: None,
            doc: None,
            pending: VecDeque::new(),
            unsure: None,
        }
    }

    fn top(&self) -> Sh {
        self.stack.last().copied().unwrap_or(Sh::Top)
    }

    fn pop(&mut self) {
        if self.stack.len() > 1 {
            self.stack.pop();
        }
    }

    /// At `$` (index `i`): pushes what it opens and returns the index after
    /// it, or `None` when it is a plain `$`.
    fn dollar(&mut self, chars: &[char], i: usize, in_double: bool) -> Option<usize> {
        let next = chars.get(i + 1).copied();
        let (frame, len) = match next {
            Some('(') if chars.get(i + 2) == Some(&'(') => (Sh::Arith(')', 2), 3),
            Some('(') => (Sh::Sub(0), 2),
            Some('{') => (Sh::Expansion, 2),
            Some('[') => (Sh::Arith(']', 1), 2),
            Some('\'') if !in_double => (Sh::AnsiC, 2),
            Some('"') if !in_double => (Sh::Double, 2),
            _ => return None,
        };
        // A command starts inside `$(`: `#` begins a comment there.
        self.word_start = frame == Sh::Sub(0);
        self.stack.push(frame);
        Some(i + len)
    }

    /// One character of a here-document's delimiter word; `false` when the
    /// word ended before it (the character is then read as code).
    fn delimiter_char(&mut self, chars: &[char], i: &mut usize) -> bool {
        let Some(d) = self.delimiter.as_mut() else {
            return false;
        };
        let c = chars[*i];
        match d.quote {
            Some(q) if c == q => d.quote = None,
            Some('"') if c == '\\' && chars.get(*i + 1).is_some_and(|n| "$`\"\\".contains(*n)) => {
                *i += 1;
                d.word.push(chars[*i]);
            }
            Some(_) => d.word.push(c),
            None if (c == ' ' || c == '\t') && d.word.is_empty() && !d.valued => {}
            None if c == '\'' || c == '"' => d.quote = Some(c),
            None if c == '\\' => {
                if let Some(&n) = chars.get(*i + 1) {
                    *i += 1;
                    d.word.push(n);
                }
            }
            None if c.is_whitespace() || ";&|()<>".contains(c) => {
                self.end_delimiter();
                return false;
            }
            None => d.word.push(c),
        }
        *i += 1;
        true
    }

    fn end_delimiter(&mut self) {
        let Some(d) = self.delimiter.take() else {
            return;
        };
        if d.valued {
            self.unsure.get_or_insert(Unsure::ParamDelimiter);
        } else if d.word.is_empty() {
            self.unsure.get_or_insert(Unsure::NoDelimiter);
        } else {
            self.pending.push_back((d.word, d.strip_tabs));
        }
    }

    /// The next pending here-document's body starts.
    fn start_heredoc(&mut self) {
        if let Some((delimiter, strip_tabs)) = self.pending.pop_front() {
            self.doc = Some(Doc {
                delimiter,
                strip_tabs,
                line: String::new(),
                valued: false,
            });
            self.stack.push(Sh::HereDoc);
        }
    }

    /// One character in code (`Top` or `Sub`); returns the next index.
    fn code_char(&mut self, chars: &[char], i: usize) -> usize {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let mut word_start = false;
        let mut at = i + 1;
        match c {
            '\\' => match next {
                Some(_) => at = i + 2,
                None => self.escape = true,
            },
            '\'' => self.stack.push(Sh::Single),
            '"' => self.stack.push(Sh::Double),
            '`' => self.stack.push(Sh::Backtick),
            '$' => {
                if let Some(next) = self.dollar(chars, i, false) {
                    at = next;
                    word_start = self.word_start;
                }
            }
            '#' if self.word_start => self.stack.push(Sh::Comment),
            '(' if next == Some('(') => {
                self.stack.push(Sh::Arith(')', 2));
                at = i + 2;
            }
            '(' => {
                if let Some(Sh::Sub(depth)) = self.stack.last_mut() {
                    *depth += 1;
                }
                word_start = true;
            }
            ')' => {
                match self.stack.last_mut() {
                    Some(Sh::Sub(0)) => self.pop(),
                    Some(Sh::Sub(depth)) => *depth -= 1,
                    _ => {}
                }
                word_start = true;
            }
            '<' if next == Some('<') && chars.get(i + 2) == Some(&'<') => {
                // A here-string: the word after it is an ordinary word.
                at = i + 3;
                word_start = true;
            }
            '<' if next == Some('<') => {
                let strip_tabs = chars.get(i + 2) == Some(&'-');
                self.delimiter = Some(Delimiter {
                    strip_tabs,
                    ..Delimiter::default()
                });
                at = i + if strip_tabs { 3 } else { 2 };
            }
            '\n' => {
                self.start_heredoc();
                word_start = true;
            }
            'c' if self.word_start
                && chars[i..].starts_with(&['c', 'a', 's', 'e'])
                && chars
                    .get(i + 4)
                    .is_none_or(|n| n.is_whitespace() || ";&|()<>".contains(*n))
                && self.stack.iter().any(|f| matches!(f, Sh::Sub(_))) =>
            {
                self.unsure.get_or_insert(Unsure::CaseInSubstitution);
            }
            c if c.is_whitespace() || ";&|<>".contains(c) => word_start = true,
            _ => {}
        }
        self.word_start = word_start;
        at
    }

    /// One character of a here-document's body.
    fn heredoc_char(&mut self, c: char) {
        let Some(doc) = self.doc.as_mut() else {
            return;
        };
        if c != '\n' {
            doc.line.push(c);
            return;
        }
        let text = if doc.strip_tabs {
            doc.line.trim_start_matches('\t')
        } else {
            doc.line.as_str()
        };
        if !doc.valued && text == doc.delimiter {
            self.doc = None;
            self.pop();
            self.start_heredoc();
            self.word_start = true;
        } else {
            doc.line.clear();
            doc.valued = false;
        }
    }

    /// Whether a `${…}` on top of the stack is inside `"…"` (directly, or
    /// through other `${…}`).
    fn expansion_quoted(&self) -> bool {
        self.stack
            .iter()
            .rev()
            .find(|f| **f != Sh::Expansion)
            .is_some_and(|f| matches!(f, Sh::Double | Sh::Arith(..)))
    }
}

impl Lexer for Bash {
    fn code(&mut self, text: &str) {
        let chars: Vec<char> = text.chars().collect();
        let mut i = 0;
        if self.escape && !chars.is_empty() {
            self.escape = false;
            i = 1;
        }
        while i < chars.len() {
            if self.delimiter.is_some() && self.delimiter_char(&chars, &mut i) {
                continue;
            }
            let c = chars[i];
            let next = chars.get(i + 1).copied();
            match self.top() {
                Sh::Top | Sh::Sub(_) => {
                    i = self.code_char(&chars, i);
                    continue;
                }
                Sh::Single => {
                    if c == '\'' {
                        self.pop();
                    }
                }
                Sh::AnsiC | Sh::Backtick => {
                    if c == '\\' && next.is_some() {
                        i += 1;
                    } else if c == '\\' {
                        self.escape = true;
                    } else if (c == '\'' && self.top() == Sh::AnsiC)
                        || (c == '`' && self.top() == Sh::Backtick)
                    {
                        self.pop();
                    }
                }
                Sh::Double => match c {
                    '\\' if next.is_some_and(|n| "$`\"\\\n".contains(n)) => i += 1,
                    '\\' if next.is_none() => self.escape = true,
                    '"' => self.pop(),
                    '`' => self.stack.push(Sh::Backtick),
                    '$' => {
                        if let Some(at) = self.dollar(&chars, i, true) {
                            i = at;
                            continue;
                        }
                    }
                    _ => {}
                },
                Sh::Expansion => {
                    let quoted = self.expansion_quoted();
                    match c {
                        '\\' if next.is_some() => i += 1,
                        '\\' => self.escape = true,
                        '}' => self.pop(),
                        '\'' | '"' if quoted => {
                            self.unsure.get_or_insert(Unsure::QuoteInQuotedExpansion);
                        }
                        '\'' => self.stack.push(Sh::Single),
                        '"' => self.stack.push(Sh::Double),
                        '`' => self.stack.push(Sh::Backtick),
                        '$' => {
                            if let Some(at) = self.dollar(&chars, i, quoted) {
                                i = at;
                                continue;
                            }
                        }
                        _ => {}
                    }
                }
                Sh::Arith(close, depth) => match c {
                    '\\' if next.is_some() => i += 1,
                    '\\' => self.escape = true,
                    // Quotes: bash removes `"`, and reads `'` as a plain
                    // character here.
                    '"' => self.stack.push(Sh::Double),
                    '`' => self.stack.push(Sh::Backtick),
                    '$' => {
                        if let Some(at) = self.dollar(&chars, i, true) {
                            i = at;
                            continue;
                        }
                    }
                    _ => {
                        let open = if close == ')' { '(' } else { '[' };
                        let depth = if c == open {
                            depth + 1
                        } else if c == close {
                            depth - 1
                        } else {
                            depth
                        };
                        if depth == 0 {
                            self.pop();
                        } else if let Some(Sh::Arith(_, d)) = self.stack.last_mut() {
                            *d = depth;
                        }
                    }
                },
                Sh::Comment => {
                    if c == '\n' {
                        // The line break ends the comment and is read as code.
                        self.pop();
                        continue;
                    }
                }
                Sh::HereDoc => self.heredoc_char(c),
            }
            i += 1;
        }
    }

    fn opaque(&mut self) {
        self.escape = false;
        if let Some(d) = self.delimiter.as_mut() {
            d.valued = true;
        }
        if let Some(doc) = self.doc.as_mut() {
            doc.valued = true;
        }
        if matches!(self.top(), Sh::Top | Sh::Sub(_)) {
            self.word_start = false;
        }
    }

    fn form(&mut self) -> Option<Place> {
        let place = if let Some(unsure) = self.unsure {
            Some(Place::Unsure(unsure))
        } else if self.stack.contains(&Sh::Backtick) {
            Some(Place::Backticks)
        } else {
            match self.top() {
                Sh::Top | Sh::Sub(_) if self.escape => Some(Place::Escaped),
                Sh::Top | Sh::Sub(_) if self.delimiter.is_some() => Some(Place::HereDocDelimiter),
                Sh::Top | Sh::Sub(_) => None,
                Sh::Single => Some(Place::SingleQuoted),
                Sh::AnsiC => Some(Place::AnsiC),
                Sh::Double => Some(Place::DoubleQuoted),
                Sh::Backtick => Some(Place::Backticks),
                Sh::Expansion => Some(Place::Expansion),
                Sh::Arith(..) => Some(Place::Arithmetic),
                Sh::Comment => Some(Place::Comment),
                Sh::HereDoc => Some(Place::HereDoc),
            }
        };
        // The form writes a value; read on as after any other one.
        self.opaque();
        place
    }
}

// -------------------------------------------------------------- python ----

/// A Python syntax context, innermost last on the stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Py {
    /// The script's code.
    Code,
    /// A string literal: its quote, whether triple-quoted, whether an
    /// f-string (or t-string), whose `{…}` fields are code.
    Str {
        quote: char,
        triple: bool,
        formatted: bool,
    },
    /// An f-string's replacement field, with the count of brackets opened
    /// inside it.
    Field(u32),
    /// An f-string field's format spec (after `:` or `!r`): text up to the
    /// field's `}`, with nested `{…}` fields.
    Spec,
    /// `# …` to the end of the line.
    Comment,
}

/// The name or number just read in code, which a quote would prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Word {
    None,
    Known(String),
    /// A parameter's value, not known.
    Unknown,
}

struct Python {
    stack: Vec<Py>,
    word: Word,
    /// A `\` ended the last stretch of code.
    escape: bool,
    unsure: Option<Unsure>,
}

impl Python {
    fn new() -> Python {
        Python {
            stack: vec![Py::Code],
            word: Word::None,
            escape: false,
            unsure: None,
        }
    }

    /// A quote at `i` opens a string (the word before it is its prefix);
    /// returns the index after the opening quote(s).
    fn open_string(&mut self, chars: &[char], i: usize) -> usize {
        let quote = chars[i];
        let formatted = match std::mem::replace(&mut self.word, Word::None) {
            Word::None => false,
            // Only a prefix makes a prefixed string: after a keyword
            // (`not'{x}'`) the string is plain.
            Word::Known(prefix) => {
                prefix.len() <= 2
                    && prefix.chars().all(|c| "rRbBuUfFtT".contains(c))
                    && prefix.chars().any(|c| "fFtT".contains(c))
            }
            Word::Unknown => {
                self.unsure.get_or_insert(Unsure::ParamPrefix);
                true
            }
        };
        let triple = chars.get(i + 1) == Some(&quote) && chars.get(i + 2) == Some(&quote);
        self.stack.push(Py::Str {
            quote,
            triple,
            formatted,
        });
        i + if triple { 3 } else { 1 }
    }

    /// One character in code or a replacement field; returns the next index.
    fn code_char(&mut self, chars: &[char], i: usize) -> usize {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let top = self.stack.last().copied().unwrap_or(Py::Code);
        if c == '\'' || c == '"' {
            return self.open_string(chars, i);
        }
        let mut at = i + 1;
        match c {
            '#' => self.stack.push(Py::Comment),
            '\\' => match next {
                Some(_) => at = i + 2,
                None => self.escape = true,
            },
            _ => {}
        }
        if let Py::Field(depth) = top {
            match c {
                '(' | '[' | '{' => self.set_field(depth + 1),
                ')' | ']' if depth > 0 => self.set_field(depth - 1),
                '}' if depth == 0 => {
                    self.stack.pop();
                }
                '}' => self.set_field(depth - 1),
                ':' if depth == 0 => self.enter_spec(),
                '!' if depth == 0 && next != Some('=') => self.enter_spec(),
                _ => {}
            }
        }
        self.word = if c.is_alphanumeric() || c == '_' {
            match std::mem::replace(&mut self.word, Word::None) {
                Word::Known(mut word) => {
                    word.push(c);
                    Word::Known(word)
                }
                Word::None => Word::Known(c.to_string()),
                Word::Unknown => Word::Unknown,
            }
        } else {
            Word::None
        };
        at
    }

    fn set_field(&mut self, depth: u32) {
        if let Some(Py::Field(d)) = self.stack.last_mut() {
            *d = depth;
        }
    }

    fn enter_spec(&mut self) {
        if let Some(top) = self.stack.last_mut() {
            *top = Py::Spec;
        }
    }
}

impl Lexer for Python {
    fn code(&mut self, text: &str) {
        let chars: Vec<char> = text.chars().collect();
        let mut i = 0;
        if self.escape && !chars.is_empty() {
            self.escape = false;
            i = 1;
        }
        while i < chars.len() {
            let c = chars[i];
            let next = chars.get(i + 1).copied();
            match self.stack.last().copied().unwrap_or(Py::Code) {
                Py::Code | Py::Field(_) => {
                    i = self.code_char(&chars, i);
                    continue;
                }
                Py::Comment => {
                    if c == '\n' {
                        self.stack.pop();
                    }
                }
                Py::Str {
                    quote,
                    triple,
                    formatted,
                } => match c {
                    '\\' if next.is_some() => i += 1,
                    '\\' => self.escape = true,
                    '\n' if !triple => {
                        // A syntax error: Python runs nothing, but where the
                        // string ends is unknown from here on.
                        self.unsure.get_or_insert(Unsure::UnclosedString);
                        self.stack.pop();
                    }
                    c if c == quote && !triple => {
                        self.stack.pop();
                    }
                    c if c == quote && chars[i..].starts_with(&[quote, quote, quote]) => {
                        self.stack.pop();
                        i += 2;
                    }
                    '{' if formatted && next == Some('{') => i += 1,
                    '}' if formatted && next == Some('}') => i += 1,
                    '{' if formatted => self.stack.push(Py::Field(0)),
                    _ => {}
                },
                Py::Spec => match c {
                    '{' => self.stack.push(Py::Field(0)),
                    '}' => {
                        self.stack.pop();
                    }
                    _ => {}
                },
            }
            i += 1;
        }
    }

    fn opaque(&mut self) {
        self.escape = false;
        if matches!(self.stack.last(), Some(Py::Code | Py::Field(_))) {
            self.word = Word::Unknown;
        }
    }

    fn form(&mut self) -> Option<Place> {
        let place = if let Some(unsure) = self.unsure {
            Some(Place::Unsure(unsure))
        } else if self.stack.iter().any(|f| {
            matches!(
                f,
                Py::Str {
                    formatted: true,
                    ..
                } | Py::Field(_)
                    | Py::Spec
            )
        }) {
            Some(Place::FString)
        } else {
            match self.stack.last().copied().unwrap_or(Py::Code) {
                Py::Str { .. } => Some(Place::PythonString),
                Py::Comment => Some(Place::Comment),
                _ if self.escape => Some(Place::Escaped),
                _ if self.word != Word::None => Some(Place::JoinsWord),
                _ => None,
            }
        };
        self.escape = false;
        // The form is a complete string literal.
        if matches!(self.stack.last(), Some(Py::Code | Py::Field(_))) {
            self.word = Word::None;
        }
        place
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(text: &str) -> Vec<Place> {
        misplaced_forms(text, ScriptLang::Shell)
            .into_iter()
            .map(|m| m.place)
            .collect()
    }

    fn python(text: &str) -> Vec<Place> {
        misplaced_forms(text, ScriptLang::Python)
            .into_iter()
            .map(|m| m.place)
            .collect()
    }

    #[test]
    fn shell_forms_in_code_stand_alone() {
        for text in [
            "echo ${p:shell}",
            "echo value=${p:shell}",
            "echo \"value=[\"${p:shell}\"]\"",
            "echo 'a'${p:shell}'b'",
            "x=${p:shell}; echo \"$x\"",
            "echo \"$(echo ${p:shell})\"",
            "echo \"a $(printf '%s' ${p:shell}) b\"",
            "echo \"$(echo \"$(echo ${p:shell})\")\"",
            "echo $(echo ${p:shell} | tr a b)",
            "echo \\\" ${p:shell}",
            "echo \"a\\\"b\" ${p:shell}",
            "echo 'it''s' ${p:shell}",
            "cat <<< ${p:shell}",
            "cat <<EOF\nbody ${bizdate}\nEOF\necho ${p:shell}",
            "cat <<-'EOF'\n\tbody\n\tEOF\necho ${p:shell}",
            "cat <<\"EOF\" | wc -l\na'b\"c\nEOF\necho ${p:shell}",
            "cat <<A <<B\na\nA\nb\nB\necho ${p:shell}",
            "# a comment with 'quote\necho ${p:shell}",
            "echo a#b ${p:shell}",
            "echo $$# ${p:shell}",
            "echo $$${HOME} ${p:shell}",
            "echo \"$${HOME:-/tmp}\" ${p:shell}",
            "echo $((1 + 2)) ${p:shell}",
            "echo $$[1 + 2] ${p:shell}",
            "x=`date`; echo ${p:shell}",
            "if [ -n ${p:shell} ]; then echo ${q:shell}; fi",
            "echo ${p:shell}${q:shell}",
            "f() { echo ${p:shell}; }",
            "echo \"${region}\" ${p:shell}",
            "echo $(echo a) ${p:shell}",
            "echo $'a\\'b' ${p:shell}",
            "diff <(echo ${p:shell}) <(echo b)",
            "case ${p:shell} in a) echo a ;; esac",
            "echo \\\n  ${p:shell}",
        ] {
            assert_eq!(shell(text), [], "{text}");
        }
    }

    #[test]
    fn shell_forms_inside_strings_and_the_rest_are_refused() {
        for (text, place) in [
            ("echo \"value=[${p:shell}]\"", Place::DoubleQuoted),
            ("echo 'value=${p:shell}'", Place::SingleQuoted),
            ("echo $'value=${p:shell}'", Place::AnsiC),
            ("echo $\"value=${p:shell}\"", Place::DoubleQuoted),
            ("echo \"a\\\"${p:shell}\"", Place::DoubleQuoted),
            ("echo \"a\\\\\" \"${p:shell}\"", Place::DoubleQuoted),
            ("echo 'a\\' \"${p:shell}\"", Place::DoubleQuoted),
            ("echo \"$(echo a) ${p:shell}\"", Place::DoubleQuoted),
            ("echo \"$(echo \")\") ${p:shell}\"", Place::DoubleQuoted),
            ("echo `echo ${p:shell}`", Place::Backticks),
            ("echo \"`echo ${p:shell}`\"", Place::Backticks),
            ("echo `echo $(echo ${p:shell})`", Place::Backticks),
            ("echo $${x:-${p:shell}}", Place::Expansion),
            ("echo \"$${x:-${p:shell}}\"", Place::Expansion),
            ("echo $((1 + ${p:shell}))", Place::Arithmetic),
            ("(( n = ${p:shell} ))", Place::Arithmetic),
            ("echo $$[1 + ${p:shell}]", Place::Arithmetic),
            ("echo hi # ${p:shell}", Place::Comment),
            ("# ${p:shell}\necho", Place::Comment),
            ("echo $(echo a # ${p:shell}\n)", Place::Comment),
            ("cat <<EOF\n${p:shell}\nEOF", Place::HereDoc),
            ("cat <<'EOF'\nv=${p:shell}\nEOF", Place::HereDoc),
            ("cat <<-\"EOF\"\n\tv=${p:shell}\n\tEOF", Place::HereDoc),
            ("cat <<EOF\n EOF\n${p:shell}\nEOF", Place::HereDoc),
            ("cat <<EOF; echo \"a\nb\"\n${p:shell}\nEOF", Place::HereDoc),
            ("x=$(cat <<EOF\n)\n${p:shell}\nEOF\n)", Place::HereDoc),
            ("cat <<A <<B\na\nA\n${p:shell}\nB", Place::HereDoc),
            ("cat << ${p:shell}\nx\n", Place::HereDocDelimiter),
            ("cat <<E${p:shell}\nx\n", Place::HereDocDelimiter),
            ("echo \\${p:shell}", Place::Escaped),
            ("echo \"unclosed\necho ${p:shell}", Place::DoubleQuoted),
            (
                "x=\"$(case a in a) echo \")\" ;; esac)\" ${p:shell}",
                Place::Unsure(Unsure::CaseInSubstitution),
            ),
            (
                "cat <<${region}\nx\n${region}\necho ${p:shell}",
                Place::Unsure(Unsure::ParamDelimiter),
            ),
            (
                "cat <<\necho ${p:shell}",
                Place::Unsure(Unsure::NoDelimiter),
            ),
            (
                "echo \"$${x:-it's}\" ${p:shell}",
                Place::Unsure(Unsure::QuoteInQuotedExpansion),
            ),
        ] {
            assert_eq!(shell(text), [place], "{text}");
        }
    }

    #[test]
    fn every_misplaced_form_is_reported_with_its_line() {
        let found = misplaced_forms(
            "echo ${a:shell}\necho \"${b:shell}\"\n# ${c:shell}\necho ${bizdate} ${d:python}",
            ScriptLang::Shell,
        );
        let lines: Vec<_> = found.iter().map(|m| (m.name.as_str(), m.line)).collect();
        assert_eq!(lines, [("b", 2), ("c", 3)]);
        let message = found[0].to_string();
        assert!(
            message.starts_with(
                "${b:shell} stands inside a double-quoted string \"…\" (line 2); a quoting form \
                 must stand alone"
            ),
            "{message}"
        );
        assert!(
            message.contains("\"value=[\"${b:shell}\"]\"") && message.contains("$DJ_PARAM_B"),
            "{message}"
        );
        let output = misplaced_forms("echo \"${up.output.v:shell}\"", ScriptLang::Shell);
        assert_eq!(output.len(), 1);
        assert!(
            output[0].to_string().contains("$DJ_PARAM_UP_OUTPUT_V"),
            "{}",
            output[0]
        );
    }

    #[test]
    fn python_forms_in_code_stand_alone() {
        for text in [
            "print(${p:python})",
            "print('v=' + ${p:python})",
            "x = ${p:python}\nprint(f'v={x}')",
            "print(\"it's\", ${p:python})",
            "print('a\\'b', ${p:python})",
            "print(r'a\\'b', ${p:python})",
            "s = '''a\n'b'\n'''\nprint(${p:python})",
            "s = \"\"\"a\"\"\" + ${p:python}",
            "s = rb'x' + ${p:python}",
            "s = f'{x:>10}' + ${p:python}",
            "s = f'{d[\"k\"]}' + ${p:python}",
            "s = f\"{'a' if x else 'b'}\" + ${p:python}",
            "s = f'{{literal}}' + ${p:python}",
            "s = f'{x!r}' + ${p:python}",
            "s = f'{a != b}' + ${p:python}",
            "# it's a comment\nprint(${p:python})",
            "print(${p:python}, ${q:python})",
            "print(${region}, ${p:python})",
            "print(\"\" ${p:python})",
            "x = [${p:python}]",
            "x = \\\n    ${p:python}",
        ] {
            assert_eq!(python(text), [], "{text}");
        }
    }

    #[test]
    fn python_forms_inside_strings_and_comments_are_refused() {
        for (text, place) in [
            ("print('v=${p:python}')", Place::PythonString),
            ("print(\"v=${p:python}\")", Place::PythonString),
            ("print('''\nv=${p:python}\n''')", Place::PythonString),
            ("print(\"\"\"a\"b${p:python}\"\"\")", Place::PythonString),
            ("print('it\\'s ${p:python}')", Place::PythonString),
            ("print(r'a\\' ${p:python}')", Place::PythonString),
            ("print(b'${p:python}')", Place::PythonString),
            ("print(Rb\"${p:python}\")", Place::PythonString),
            ("print(u'${p:python}')", Place::PythonString),
            ("print(f'{${p:python}}')", Place::FString),
            ("print(f'v=${p:python}')", Place::FString),
            ("print(F\"{x} ${p:python}\")", Place::FString),
            ("print(rf'''{x}\n${p:python}''')", Place::FString),
            ("print(f'{x:>{${p:python}}}')", Place::FString),
            ("print(f\"{x + \" ${p:python} \"}\")", Place::FString),
            ("print(f'{d[\"k\"]} ${p:python}')", Place::FString),
            ("x = 1  # ${p:python}", Place::Comment),
            ("x = f${p:python}", Place::JoinsWord),
            ("x = rb${p:python}", Place::JoinsWord),
            ("x = \\${p:python}", Place::Escaped),
            (
                "x = ${region}'a'\nprint(${p:python})",
                Place::Unsure(Unsure::ParamPrefix),
            ),
            (
                "x = 'open\nprint(${p:python})",
                Place::Unsure(Unsure::UnclosedString),
            ),
        ] {
            assert_eq!(python(text), [place], "{text}");
        }
    }

    #[test]
    fn only_the_forms_of_the_script_language_are_judged() {
        assert_eq!(python("print('${p:shell}')"), []);
        assert_eq!(shell("echo '${p:python}' '${p:literal}'"), []);
        let message = misplaced_forms("print('v=${p:python}')", ScriptLang::Python)[0].to_string();
        assert!(
            message.contains("'v=' + ${p:python}")
                && message.contains("os.environ[\"DJ_PARAM_P\"]"),
            "{message}"
        );
    }
}
