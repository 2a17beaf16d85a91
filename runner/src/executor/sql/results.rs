//! What a row-returning statement shows in the log: its first rows as a
//! table, and a count of the rest.

use futures::StreamExt;
use sea_orm::{
    DatabaseConnection, FromQueryResult, JsonValue, QueryResult, Statement, StreamTrait,
};

use crate::executor::LogSink;

/// Rows of a result shown in the log; the rest are only counted.
pub const MAX_ROWS: usize = 100;
/// A cell is shown up to this many characters.
const MAX_CELL: usize = 80;

/// Runs a row-returning statement: logs the first [`MAX_ROWS`] rows as a
/// table and counts the rest.
pub(super) async fn query(
    db: &DatabaseConnection,
    sql: &str,
    log: &LogSink,
) -> Result<(), sea_orm::DbErr> {
    let mut stream = db
        .stream_raw(Statement::from_string(db.get_database_backend(), sql))
        .await?;
    let mut table = Table::default();
    let mut count: u64 = 0;
    while let Some(row) = stream.next().await {
        let row = row?;
        count += 1;
        if table.rows.len() < MAX_ROWS {
            table.push(&row)?;
        }
    }
    drop(stream);
    for line in table.render() {
        log.line(&line);
    }
    log.line(&match count {
        1 => "(1 row)".to_owned(),
        n if n as usize <= MAX_ROWS => format!("({} rows)", thousands(n)),
        n => format!("({MAX_ROWS} of {} rows shown)", thousands(n)),
    });
    Ok(())
}

/// A result's first rows, as text.
#[derive(Default)]
struct Table {
    columns: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn push(&mut self, row: &QueryResult) -> Result<(), sea_orm::DbErr> {
        if self.columns.is_empty() {
            self.columns = row.column_names();
        }
        let json = JsonValue::from_query_result(row, "")?;
        let mut cells = Vec::with_capacity(self.columns.len());
        for (index, column) in self.columns.iter().enumerate() {
            // JSON objects have one value per name: a repeated name (`a.id`,
            // `b.id`) is read by position instead.
            let repeated = self.columns.iter().filter(|c| *c == column).count() > 1;
            let value = if repeated {
                by_index(row, index)
            } else {
                json.get(column).cloned().or_else(|| by_index(row, index))
            };
            cells.push(match value {
                Some(value) => cell(&value),
                None => format!("<{}>", type_name(row, index)),
            });
        }
        self.rows.push(cells);
        Ok(())
    }

    /// Header, rule and rows, each column as wide as its widest cell.
    fn render(&self) -> Vec<String> {
        if self.columns.is_empty() {
            return Vec::new();
        }
        let header: Vec<String> = self.columns.iter().map(|c| clip(c)).collect();
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let padded: Vec<String> = cells
                .iter()
                .zip(&widths)
                .map(|(cell, width)| format!("{cell:<width$}"))
                .collect();
            padded.join(" | ").trim_end().to_owned()
        };
        let mut lines = vec![line(&header)];
        lines.push(
            widths
                .iter()
                .map(|w| "-".repeat(*w))
                .collect::<Vec<_>>()
                .join("-+-"),
        );
        lines.extend(self.rows.iter().map(|row| line(row)));
        lines
    }
}

/// A column's value read by position, for the types SeaORM can read.
fn by_index(row: &QueryResult, index: usize) -> Option<JsonValue> {
    macro_rules! try_type {
        ($($t:ty),*) => {
            $(
                if let Ok(value) = row.try_get_by_index::<Option<$t>>(index) {
                    return Some(serde_json::json!(value));
                }
            )*
        };
    }
    try_type!(
        i64,
        u64,
        i32,
        i16,
        f64,
        f32,
        sea_orm::prelude::Decimal,
        bool,
        String,
        chrono::NaiveDate,
        chrono::NaiveTime,
        chrono::NaiveDateTime,
        chrono::DateTime<chrono::Utc>,
        serde_json::Value,
        sea_orm::prelude::Uuid,
        Vec<u8>
    );
    None
}

/// The database's name for a column's type, for values that cannot be shown.
fn type_name(row: &QueryResult, index: usize) -> String {
    use sea_orm::sqlx::{Column, Row, TypeInfo};
    let name = if let Some(row) = row.try_as_pg_row() {
        row.columns()
            .get(index)
            .map(|c| c.type_info().name().to_owned())
    } else if let Some(row) = row.try_as_mysql_row() {
        row.columns()
            .get(index)
            .map(|c| c.type_info().name().to_owned())
    } else if let Some(row) = row.try_as_sqlite_row() {
        row.columns()
            .get(index)
            .map(|c| c.type_info().name().to_owned())
    } else {
        None
    };
    name.unwrap_or_else(|| "?".to_owned())
}

/// A value as a table cell: NULL for null, strings without quotes, one line.
fn cell(value: &JsonValue) -> String {
    let text = match value {
        JsonValue::Null => return "NULL".to_owned(),
        JsonValue::String(s) => s.clone(),
        other => other.to_string(),
    };
    clip(&text)
}

/// One line of at most [`MAX_CELL`] characters.
fn clip(text: &str) -> String {
    let one_line = text
        .replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('\r', "\\r")
        .replace('\t', "\\t");
    if one_line.chars().count() <= MAX_CELL {
        return one_line;
    }
    let mut cut: String = one_line.chars().take(MAX_CELL - 1).collect();
    cut.push('…');
    cut
}

/// `2345` as `2,345`.
pub(super) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_show_null_and_cut_long_cells() {
        let table = Table {
            columns: vec!["id".to_owned(), "name".to_owned()],
            rows: vec![
                vec!["1".to_owned(), cell(&JsonValue::Null)],
                vec!["22".to_owned(), cell(&serde_json::json!("a\nb"))],
            ],
        };
        assert_eq!(
            table.render(),
            ["id | name", "---+-----", "1  | NULL", "22 | a\\nb"]
        );
        let long = cell(&serde_json::json!("x".repeat(200)));
        assert_eq!(long.chars().count(), MAX_CELL);
        assert!(long.ends_with('…'));
        assert!(Table::default().render().is_empty());
    }

    #[test]
    fn numbers_get_thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(2345), "2,345");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
