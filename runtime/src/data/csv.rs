//! Tables from CSV files: numeric and categorical feature columns chosen
//! by name, a label column read as classes or as real values, and the
//! [`Schema`] that fixes the columns, the category levels and the class
//! names, so a test file is encoded exactly as the training file was.

use std::collections::BTreeSet;
use std::path::Path;

use super::{DataError, InMemoryDataset, Targets};
use crate::DataVec;

/// How to read a table. Every column but the target is a numeric feature
/// unless `features` names the ones to use; `categorical` columns are
/// one-hot encoded.
#[derive(Clone, Debug)]
pub struct CsvOptions {
    /// The label column, by its header name.
    pub target: String,
    /// Whether the label is a class (any text or whole number; classes are
    /// numbered in sorted order) or a real value.
    pub targets: Targets,
    /// The feature columns, in this order; `None` takes every column but
    /// the target, in the file's order.
    pub features: Option<Vec<String>>,
    /// Feature columns that hold categories: each becomes one column per
    /// level (one-hot), named `column=level`.
    pub categorical: Vec<String>,
    /// The field separator (`b','`; `b';'` or `b'\t'` for other files).
    pub delimiter: u8,
    /// Skip rows with an empty cell in a column that is read, instead of
    /// stopping with an error naming the row and the column.
    pub skip_missing: bool,
    /// The columns, levels and classes of an earlier read (the training
    /// file's), so this file is encoded the same way; a level or class it
    /// has not seen is an error.
    pub schema: Option<Schema>,
}

impl CsvOptions {
    /// Reads `target` as class labels.
    pub fn classes(target: &str) -> Self {
        CsvOptions {
            target: target.to_owned(),
            targets: Targets::Classes,
            features: None,
            categorical: Vec::new(),
            delimiter: b',',
            skip_missing: false,
            schema: None,
        }
    }

    /// Reads `target` as a real value to regress.
    pub fn real(target: &str) -> Self {
        CsvOptions { targets: Targets::Real, ..CsvOptions::classes(target) }
    }

    /// Uses only these feature columns, in this order.
    pub fn features(mut self, columns: &[&str]) -> Self {
        self.features = Some(columns.iter().map(|c| (*c).to_owned()).collect());
        self
    }

    /// One-hot encodes these feature columns.
    pub fn categorical(mut self, columns: &[&str]) -> Self {
        self.categorical = columns.iter().map(|c| (*c).to_owned()).collect();
        self
    }

    /// Skips rows with an empty cell in a column that is read.
    pub fn skip_missing(mut self, skip: bool) -> Self {
        self.skip_missing = skip;
        self
    }

    /// Encodes as `schema` says (see [`CsvOptions::schema`]).
    pub fn with_schema(mut self, schema: &Schema) -> Self {
        self.schema = Some(schema.clone());
        self
    }
}

/// One feature column as the model sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    /// A number, as is.
    Numeric(String),
    /// A category: one input per level, 1 for the row's level.
    Categorical {
        /// The column's header name.
        name: String,
        /// Its levels in input order.
        levels: Vec<String>,
    },
}

/// The columns a table was encoded with: enough to encode another file
/// the same way and to name every input.
#[derive(Clone, Debug, PartialEq)]
pub struct Schema {
    /// The feature columns, in input order.
    pub columns: Vec<Column>,
    /// The target column's name.
    pub target: String,
    /// The class names in index order (empty for real targets).
    pub classes: Vec<String>,
}

impl Schema {
    /// The name of each input: a numeric column's name, or
    /// `column=level` for each level of a categorical one.
    pub fn input_names(&self) -> Vec<String> {
        self.columns
            .iter()
            .flat_map(|c| match c {
                Column::Numeric(name) => vec![name.clone()],
                Column::Categorical { name, levels } => levels.iter().map(|l| format!("{name}={l}")).collect(),
            })
            .collect()
    }
}

/// A table read from CSV: the samples (inputs `[features]` f32; targets
/// class indices, or one real value each as `[1]`), and the schema.
#[derive(Clone, Debug)]
pub struct CsvTable {
    /// The samples.
    pub dataset: InMemoryDataset,
    /// How the columns were encoded.
    pub schema: Schema,
    /// Rows skipped for a missing value (with `skip_missing`).
    pub skipped_rows: usize,
}

/// Reads a CSV file with a header row. Errors name the file and, for a
/// bad cell, its row (1-based, the header being row 1) and column: a ragged
/// row, a column the header lacks, a value that is not a number, a level
/// or class the schema does not know, an empty cell.
pub fn read_csv(path: &Path, options: &CsvOptions) -> Result<CsvTable, DataError> {
    let bad = |problem: String| DataError::format(path, problem);
    let bytes = std::fs::read(path).map_err(|e| DataError::io(path, e))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let before = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        bad(format!("row {}: not UTF-8 text", 1 + line_breaks(before)))
    })?;
    let mut records = parse_records(&text, options.delimiter).map_err(bad)?.into_iter();
    let Some((_, header)) = records.next() else { return Err(bad("the file is empty: no header row".into())) };
    let find = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| bad(format!("no column named `{name}` (the header has: {})", header.join(", "))))
    };
    let target = find(&options.target)?;
    let feature_names: Vec<String> = match (&options.schema, &options.features) {
        (Some(schema), _) => schema
            .columns
            .iter()
            .map(|c| match c {
                Column::Numeric(n) | Column::Categorical { name: n, .. } => n.clone(),
            })
            .collect(),
        (None, Some(f)) => f.clone(),
        (None, None) => header.iter().filter(|h| **h != options.target).cloned().collect(),
    };
    for c in &options.categorical {
        if !feature_names.contains(c) {
            return Err(bad(format!("categorical column `{c}` is not among the features")));
        }
    }
    let used: Vec<usize> = feature_names.iter().map(|n| find(n)).collect::<Result<_, _>>()?;
    if used.contains(&target) {
        return Err(bad(format!("`{}` is both the target and a feature", options.target)));
    }

    // Every row's cells in the used columns; rows with an empty one are
    // skipped or refused.
    let mut rows: Vec<(usize, Vec<String>, String)> = Vec::new();
    let mut skipped_rows = 0;
    for (row, record) in records {
        if record.len() != header.len() {
            return Err(bad(format!("row {row}: {} fields, but the header has {}", record.len(), header.len())));
        }
        let cell = |c: usize| record[c].trim().to_owned();
        let cells: Vec<String> = used.iter().map(|&c| cell(c)).collect();
        let label = cell(target);
        let empty = used.iter().zip(&cells).map(|(&c, v)| (c, v)).chain([(target, &label)]).find(|(_, v)| v.is_empty());
        if let Some((c, _)) = empty {
            if options.skip_missing {
                skipped_rows += 1;
                continue;
            }
            return Err(bad(format!(
                "row {row}, column `{}`: the cell is empty (skip such rows with `skip_missing`)",
                header[c]
            )));
        }
        rows.push((row, cells, label));
    }

    // The columns: from the schema, or from this file.
    let columns: Vec<Column> = match &options.schema {
        Some(schema) => schema.columns.clone(),
        None => feature_names
            .iter()
            .enumerate()
            .map(|(j, name)| {
                if options.categorical.contains(name) {
                    Column::Categorical {
                        name: name.clone(),
                        levels: sorted_levels(rows.iter().map(|r| r.1[j].as_str())),
                    }
                } else {
                    Column::Numeric(name.clone())
                }
            })
            .collect(),
    };
    let classes: Vec<String> = match (&options.schema, options.targets) {
        (Some(schema), _) => schema.classes.clone(),
        (None, Targets::Classes) => sorted_levels(rows.iter().map(|r| r.2.as_str())),
        (None, Targets::Real) => Vec::new(),
    };

    let width: usize =
        columns.iter().map(|c| if let Column::Categorical { levels, .. } = c { levels.len() } else { 1 }).sum();
    let mut inputs = Vec::with_capacity(rows.len() * width);
    let (mut class_ids, mut reals) = (Vec::new(), Vec::new());
    for (row, cells, label) in &rows {
        for (column, value) in columns.iter().zip(cells) {
            match column {
                Column::Numeric(name) => inputs.push(
                    number(value)
                        .ok_or_else(|| bad(format!("row {row}, column `{name}`: `{value}` is not a number")))?
                        as f32,
                ),
                Column::Categorical { name, levels } => {
                    let at = levels.iter().position(|l| l == value).ok_or_else(|| {
                        bad(format!("row {row}, column `{name}`: level `{value}` is not one of {}", levels.join(", ")))
                    })?;
                    inputs.extend((0..levels.len()).map(|k| f32::from(u8::from(k == at))));
                }
            }
        }
        match options.targets {
            Targets::Classes => class_ids.push(classes.iter().position(|c| c == label).ok_or_else(|| {
                bad(format!(
                    "row {row}, column `{}`: class `{label}` is not one of {}",
                    options.target,
                    classes.join(", ")
                ))
            })? as i64),
            Targets::Real => reals.push(
                number(label)
                    .ok_or_else(|| bad(format!("row {row}, column `{}`: `{label}` is not a number", options.target)))?
                    as f32,
            ),
        }
    }
    let dataset = match options.targets {
        Targets::Classes => InMemoryDataset::with_targets(inputs, &[width], DataVec::I64(class_ids), &[]),
        Targets::Real => InMemoryDataset::with_targets(inputs, &[width], DataVec::F32(reals), &[1]),
    }
    .map_err(|e| bad(e.to_string()))?;
    Ok(CsvTable { dataset, schema: Schema { columns, target: options.target.clone(), classes }, skipped_rows })
}

/// A finite number, or `None`.
fn number(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// The distinct values in sorted order: numerically when every value is a
/// number (so `2` comes before `10`), else as text.
fn sorted_levels<'a>(values: impl Iterator<Item = &'a str>) -> Vec<String> {
    let distinct: BTreeSet<&str> = values.collect();
    let mut levels: Vec<String> = distinct.into_iter().map(str::to_owned).collect();
    if levels.iter().all(|l| number(l).is_some()) {
        levels.sort_by(|a, b| number(a).unwrap_or(0.0).total_cmp(&number(b).unwrap_or(0.0)));
    }
    levels
}

/// A CSV record: the line it starts on (1-based), and its fields.
type Record = (usize, Vec<String>);

/// The records of CSV `text` as RFC 4180 writes them: fields split by
/// `delimiter`; a field in double quotes may hold the delimiter, line
/// breaks and quotes (doubled); records end at `\n`, `\r\n` or `\r`.
/// Blank lines are skipped and a leading byte-order mark is dropped. An
/// unclosed quote, or text after a closing one, is an error naming its row.
fn parse_records(text: &str, delimiter: u8) -> Result<Vec<Record>, String> {
    if !delimiter.is_ascii() || matches!(delimiter, b'"' | b'\n' | b'\r') {
        return Err(format!(
            "the delimiter {:?} is not an ASCII character other than a quote or a line break",
            delimiter as char
        ));
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // Every byte the parser stops at is ASCII, so each slice below falls
    // on a char boundary.
    let bytes = text.as_bytes();
    let (mut at, mut line, mut out) = (0, 1, Vec::new());
    while at < bytes.len() {
        let (start_line, mut fields, mut quoted) = (line, Vec::new(), false);
        loop {
            let mut field = String::new();
            if bytes.get(at) == Some(&b'"') {
                quoted = true;
                at += 1;
                loop {
                    let Some(end) = bytes[at..].iter().position(|&b| b == b'"').map(|p| at + p) else {
                        return Err(format!("row {start_line}: a quoted field is not closed"));
                    };
                    field.push_str(&text[at..end]);
                    line += line_breaks(&bytes[at..end]);
                    if bytes.get(end + 1) == Some(&b'"') {
                        field.push('"');
                        at = end + 2;
                    } else {
                        at = end + 1;
                        break;
                    }
                }
            } else {
                let end = bytes[at..]
                    .iter()
                    .position(|&b| b == delimiter || b == b'\n' || b == b'\r')
                    .map_or(bytes.len(), |p| at + p);
                field.push_str(&text[at..end]);
                at = end;
            }
            fields.push(field);
            match bytes.get(at) {
                Some(&b) if b == delimiter => at += 1,
                Some(b'\r') if bytes.get(at + 1) == Some(&b'\n') => {
                    at += 2;
                    line += 1;
                    break;
                }
                Some(b'\r' | b'\n') => {
                    at += 1;
                    line += 1;
                    break;
                }
                None => break,
                Some(_) => return Err(format!("row {line}: text after a closing quote")),
            }
        }
        if quoted || fields.len() > 1 || !fields[0].is_empty() {
            out.push((start_line, fields));
        }
    }
    Ok(out)
}

/// The line breaks in `bytes` (`\n`, `\r\n` and a lone `\r` count one each).
fn line_breaks(bytes: &[u8]) -> usize {
    bytes.iter().enumerate().filter(|&(i, &b)| b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n'))).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Dataset;

    fn file(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("blaze-csv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join(name);
        std::fs::write(&path, text).expect("written");
        path
    }

    #[test]
    fn columns_by_name_categories_one_hot_and_classes_in_order() {
        let path = file(
            "cars.csv",
            "name,mpg,origin,weight,kind\na,18,USA,3504,big\nb,26,Japan,2130,small\nc,24,Europe,2372,small\n",
        );
        let options = CsvOptions::classes("kind").features(&["weight", "origin", "mpg"]).categorical(&["origin"]);
        let t = read_csv(&path, &options).expect("reads");
        assert_eq!(t.schema.input_names(), ["weight", "origin=Europe", "origin=Japan", "origin=USA", "mpg"]);
        assert_eq!(t.schema.classes, ["big", "small"]);
        let b = t.dataset.batch(&[0, 1]);
        assert_eq!(b.inputs.to_vec::<f32>().expect("f32"), [3504., 0., 0., 1., 18., 2130., 0., 1., 0., 26.]);
        assert_eq!(b.targets.values, DataVec::I64(vec![0, 1]));
        // A second file is encoded with the first one's schema.
        let test = file("test.csv", "name,mpg,origin,weight,kind\nd,30,Japan,2000,small\n");
        let t2 = read_csv(&test, &options.clone().with_schema(&t.schema)).expect("reads");
        assert_eq!(t2.dataset.batch(&[0]).inputs.to_vec::<f32>().expect("f32"), [2000., 0., 1., 0., 30.]);
        let unseen = file("unseen.csv", "name,mpg,origin,weight,kind\nd,30,Mars,2000,small\n");
        let err = read_csv(&unseen, &options.with_schema(&t.schema)).expect_err("no Mars").to_string();
        assert!(
            err.contains("unseen.csv: row 2, column `origin`: level `Mars` is not one of Europe, Japan, USA"),
            "{err}"
        );
    }

    #[test]
    fn real_targets_and_numeric_class_order() {
        let path = file("reg.csv", "x,y,label\n1,2.5,10\n2,3.5,2\n3,4.5,2\n");
        let t = read_csv(&path, &CsvOptions::real("y")).expect("reads");
        assert_eq!(t.schema.input_names(), ["x", "label"]);
        assert_eq!(t.dataset.batch(&[2]).targets.values, DataVec::F32(vec![4.5]));
        assert_eq!(t.dataset.batch(&[2]).targets.shape, [1, 1]);
        let c = read_csv(&path, &CsvOptions::classes("label")).expect("reads");
        assert_eq!(c.schema.classes, ["2", "10"], "numbers sort as numbers");
    }

    #[test]
    fn bad_files_name_the_row_and_the_column() {
        let cases = [
            ("ragged.csv", "a,b,y\n1,2,0\n3,0\n", CsvOptions::classes("y"), "row 3: 2 fields, but the header has 3"),
            ("text.csv", "a,b,y\n1,2,0\n3,x,1\n", CsvOptions::classes("y"), "row 3, column `b`: `x` is not a number"),
            ("nan.csv", "a,b,y\n1,NaN,0\n", CsvOptions::classes("y"), "row 2, column `b`: `NaN` is not a number"),
            ("empty.csv", "a,b,y\n1,,0\n", CsvOptions::classes("y"), "row 2, column `b`: the cell is empty"),
            ("target.csv", "a,b,y\n1,2,0\n", CsvOptions::classes("z"), "no column named `z` (the header has: a, b, y)"),
            ("label.csv", "a,b,y\n1,2,high\n", CsvOptions::real("y"), "row 2, column `y`: `high` is not a number"),
            (
                "cat.csv",
                "a,b,y\n1,2,0\n",
                CsvOptions::classes("y").categorical(&["c"]),
                "categorical column `c` is not among",
            ),
        ];
        for (name, text, options, want) in cases {
            let err = read_csv(&file(name, text), &options).expect_err(name).to_string();
            assert!(err.contains(name) && err.contains(want), "{name}: {err}");
        }
        let skipped = read_csv(&file("gaps.csv", "a,b,y\n1,,0\n2,3,1\n"), &CsvOptions::classes("y").skip_missing(true))
            .expect("skips the gap");
        assert_eq!((skipped.dataset.len(), skipped.skipped_rows), (1, 1));
        let err = read_csv(Path::new("/nonexistent/table.csv"), &CsvOptions::classes("y")).expect_err("no file");
        assert!(err.to_string().contains("/nonexistent/table.csv"), "{err}");
    }

    #[test]
    fn records_as_rfc_4180_writes_them() {
        let parse = |text: &str| parse_records(text, b',').expect(text);
        let fields = |rows: Vec<Record>| rows.into_iter().map(|r| r.1).collect::<Vec<_>>();
        assert_eq!(
            parse("a,b\r\n\"x, \"\"y\"\"\",2\n\n\"two\nlines\",3\rlast,\n"),
            [
                (1, vec!["a".into(), "b".into()]),
                (2, vec!["x, \"y\"".into(), "2".into()]),
                (4, vec!["two\nlines".into(), "3".into()]),
                (6, vec!["last".into(), String::new()]),
            ]
        );
        assert_eq!(
            fields(parse("\u{feff}h\n\"\"\n")),
            [vec!["h".to_owned()], vec![String::new()]],
            "BOM; a quoted empty field"
        );
        assert_eq!(fields(parse_records("a;b\t\n1;2\n", b';').expect("semicolons")), [["a", "b\t"], ["1", "2"]]);
        assert_eq!(fields(parse("a,b,")), [["a", "b", ""]], "a delimiter at the end of the file");
        assert_eq!(parse_records("a,b\n\"1,2\n", b','), Err("row 2: a quoted field is not closed".into()));
        assert_eq!(parse_records("a\n\"1\"x\n", b','), Err("row 2: text after a closing quote".into()));
        assert!(parse_records("a", b'"').expect_err("quote").contains("not an ASCII character other than"));
    }

    #[test]
    fn records_agree_with_the_csv_crate() {
        let texts = [
            "a,b,c\n1,2,3\n",
            "a,b\r\n1,2\r\n",
            "\"q\"\"uote\",\"de,lim\"\n\"multi\nline\",x\n",
            "a,b\n\n\n1,2\n",
            "a,\n,b\n,\n",
            "x\ry\rz",
            "héllo,wörld\n€,ü\n",
        ];
        for text in texts {
            let mine: Vec<Vec<String>> = parse_records(text, b',').expect(text).into_iter().map(|r| r.1).collect();
            let mut reader = ::csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(text.as_bytes());
            let theirs: Vec<Vec<String>> = reader
                .records()
                .map(|r| r.expect("the csv crate reads it").iter().map(str::to_owned).collect())
                .collect();
            assert_eq!(mine, theirs, "{text:?}");
        }
    }

    #[test]
    fn rows_count_lines_and_bad_bytes_name_theirs() {
        let path = file("quoted.csv", "a,y\n\"one\ntwo\",0\n1,2,3\n");
        let err = read_csv(&path, &CsvOptions::classes("y")).expect_err("ragged").to_string();
        assert!(err.contains("quoted.csv") && err.contains("row 4: 3 fields, but the header has 2"), "{err}");
        let path = file("latin1.csv", "");
        std::fs::write(&path, b"a,y\n1,0\n2,\xe9\n").expect("written");
        let err = read_csv(&path, &CsvOptions::classes("y")).expect_err("not UTF-8").to_string();
        assert!(err.contains("latin1.csv") && err.contains("row 3: not UTF-8 text"), "{err}");
        let err = read_csv(&file("blank.csv", "\n\n"), &CsvOptions::classes("y")).expect_err("empty").to_string();
        assert!(err.contains("blank.csv") && err.contains("the file is empty: no header row"), "{err}");
    }
}
