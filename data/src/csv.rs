//! Tables from CSV files: numeric and categorical feature columns chosen
//! by name, a label column read as classes or as real values, and the
//! [`Schema`] that fixes the columns, the category levels and the class
//! names, so a test file is encoded exactly as the training file was.
//!
//! The file streams through the `csv` crate's buffered reader into one
//! reused record: numbers go straight into f32s, and a categorical cell or
//! a class label into a small code per row (each distinct text is held
//! once), renumbered in sorted order at the end. Nothing holds the file's
//! text, so a read takes about the memory of the dataset it returns
//! (twice that with categorical columns, laid out one-hot at the end).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use ::csv::{ByteRecord, ReaderBuilder};

use super::{DataError, InMemoryDataset, Targets};
use blaze_runtime::DataVec;

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

impl Column {
    /// The column's header name.
    pub fn name(&self) -> &str {
        match self {
            Column::Numeric(name) | Column::Categorical { name, .. } => name,
        }
    }
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

/// Reads a CSV file with a header row, as RFC 4180 writes it (quoted
/// fields with delimiters, line breaks and doubled quotes; LF, CRLF or CR
/// line ends; blank lines skipped; a byte-order mark dropped). Header
/// names and cells are trimmed of surrounding whitespace. Numbers are
/// rounded once to the nearest f32. Errors name the file and, for a bad
/// cell, its row (1-based, counted in lines, the header being row 1) and
/// column: two columns of one name, a column the header lacks, a ragged
/// row, a quoted field left open, a value that is not a finite number or
/// lies beyond f32's range (one that rounds to zero reads as zero), a
/// level or class the schema does not know, an empty cell.
pub fn read_csv(path: &Path, options: &CsvOptions) -> Result<CsvTable, DataError> {
    let bad = |problem: String| DataError::format(path, problem);
    let delimiter = options.delimiter;
    if !delimiter.is_ascii() || matches!(delimiter, b'"' | b'\n' | b'\r') {
        return Err(bad(format!(
            "the delimiter {:?} is not an ASCII character other than a quote or a line break",
            delimiter as char
        )));
    }
    let io = |e: ::csv::Error| DataError::io(path, e.into());
    let rows = Rows { path, delimiter };
    let file = File::open(path).map_err(|e| DataError::io(path, e))?;
    let mut reader = records(file, delimiter);
    let mut record = ByteRecord::new();
    if !reader.read_byte_record(&mut record).map_err(io)? {
        return Err(bad("the file is empty: no header row".into()));
    }
    let header = record
        .iter()
        .map(|name| std::str::from_utf8(name).map(|n| trim(n).to_owned()))
        .collect::<Result<Vec<String>, _>>()
        .map_err(|_| rows.error(0, ": not UTF-8 text"))?;
    // A header left open inside quotes swallowed the file: say that, not
    // what is missing from it.
    let in_header = |problem: String| if rows.unclosed(0) { rows.error(0, "") } else { bad(problem) };
    let mut seen = HashMap::new();
    for (j, name) in header.iter().enumerate().filter(|(_, n)| !n.is_empty()) {
        if let Some(i) = seen.insert(name.as_str(), j) {
            return Err(in_header(format!("columns {} and {} of the header are both named `{name}`", i + 1, j + 1)));
        }
    }
    let find = |name: &str| {
        let mut at = header.iter().enumerate().filter(|(_, h)| *h == name).map(|(j, _)| j);
        match (at.next(), at.next()) {
            (Some(j), None) => Ok(j),
            // Only columns without a name can share one.
            (Some(i), Some(j)) => Err(in_header(format!(
                "columns {} and {} of the header have no name, so neither can be picked by it",
                i + 1,
                j + 1
            ))),
            (None, _) => {
                let names: Vec<String> = header.iter().map(|h| format!("`{h}`")).collect();
                Err(in_header(format!("no column named `{name}` (the header has: {})", names.join(", "))))
            }
        }
    };
    let target = find(&options.target)?;
    let feature_names: Vec<String> = match (&options.schema, &options.features) {
        (Some(schema), _) => schema.columns.iter().map(|c| c.name().to_owned()).collect(),
        (None, Some(f)) => f.clone(),
        (None, None) => header.iter().enumerate().filter(|&(j, _)| j != target).map(|(_, h)| h.clone()).collect(),
    };
    for c in &options.categorical {
        if !feature_names.contains(c) {
            return Err(in_header(format!("categorical column `{c}` is not among the features")));
        }
    }
    let used: Vec<usize> = match (&options.schema, &options.features) {
        (None, None) => (0..header.len()).filter(|&j| j != target).collect(),
        _ => feature_names.iter().map(|n| find(n)).collect::<Result<_, _>>()?,
    };
    if used.contains(&target) {
        return Err(in_header(format!("`{}` is both the target and a feature", options.target)));
    }

    // What each used column becomes: a number, or a level code of one of
    // the categorical columns (the schema's levels, or those met so far).
    let is_categorical = |k: usize| match &options.schema {
        Some(schema) => matches!(schema.columns[k], Column::Categorical { .. }),
        None => options.categorical.contains(&feature_names[k]),
    };
    let mut levels: Vec<Codes> = Vec::new();
    let slots: Vec<Option<usize>> = (0..used.len())
        .map(|k| {
            is_categorical(k).then(|| {
                levels.push(match options.schema.as_ref().map(|s| &s.columns[k]) {
                    Some(Column::Categorical { levels, .. }) => Codes::fixed(levels),
                    _ => Codes::default(),
                });
                levels.len() - 1
            })
        })
        .collect();
    let mut classes = match &options.schema {
        Some(schema) => Codes::fixed(&schema.classes),
        None => Codes::default(),
    };

    // The rows, one reused record at a time: numbers as f32, categories
    // and classes as codes.
    let (mut numbers, mut level_codes, mut class_codes, mut reals) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut skipped_rows, mut last) = (0, 0);
    while reader.read_byte_record(&mut record).map_err(io)? {
        let start = record.position().map_or(0, ::csv::Position::byte);
        last = start;
        let at = |problem: String| rows.error(start, &problem);
        if record.len() != header.len() {
            return Err(at(format!(": {} fields, but the header has {}", record.len(), header.len())));
        }
        let utf8 = || at(": not UTF-8 text".into());
        let text = std::str::from_utf8(record.as_slice()).map_err(|_| utf8())?;
        // Empty cells first: they skip the row, whatever else is wrong.
        if let Some(&j) = used.iter().chain([&target]).find(|&&j| blank(&record[j])) {
            if options.skip_missing {
                skipped_rows += 1;
                continue;
            }
            return Err(at(format!(
                ", column `{}`: the cell is empty (skip such rows with `skip_missing`)",
                header[j]
            )));
        }
        let cell = |j: usize| record.range(j).and_then(|r| text.get(r)).map(trim).ok_or_else(utf8);
        for (&j, slot) in used.iter().zip(&slots) {
            let value = cell(j)?;
            match *slot {
                None => {
                    numbers.push(number(value).map_err(|why| at(format!(", column `{}`: `{value}` {why}", header[j])))?)
                }
                Some(k) => level_codes.push(levels[k].code(value).ok_or_else(|| {
                    at(format!(
                        ", column `{}`: level `{value}` is not one of {}",
                        header[j],
                        levels[k].texts.join(", ")
                    ))
                })?),
            }
        }
        let label = cell(target)?;
        match options.targets {
            Targets::Classes => class_codes.push(classes.code(label).ok_or_else(|| {
                at(format!(", column `{}`: class `{label}` is not one of {}", header[target], classes.texts.join(", ")))
            })?),
            Targets::Real => {
                reals.push(number(label).map_err(|why| at(format!(", column `{}`: `{label}` {why}", header[target])))?);
            }
        }
    }
    if rows.unclosed(last) {
        return Err(rows.error(last, ""));
    }

    // Codes renumbered in sorted order, and the inputs laid out.
    let (classes, class_order) = classes.into_sorted();
    let (level_names, level_orders): (Vec<Vec<String>>, Vec<Vec<u32>>) =
        levels.into_iter().map(Codes::into_sorted).unzip();
    let columns: Vec<Column> = match &options.schema {
        Some(schema) => schema.columns.clone(),
        None => feature_names
            .into_iter()
            .zip(&slots)
            .map(|(name, slot)| match *slot {
                None => Column::Numeric(name),
                Some(k) => Column::Categorical { name, levels: level_names[k].clone() },
            })
            .collect(),
    };
    let width: usize = level_names.iter().map(Vec::len).sum::<usize>() + slots.iter().filter(|s| s.is_none()).count();
    let inputs = if level_orders.is_empty() {
        numbers
    } else {
        let n = class_codes.len() + reals.len();
        let mut inputs = Vec::with_capacity(n * width);
        // The numbers and codes were pushed row by row in the slots' order.
        let (mut number, mut code) = (numbers.into_iter(), level_codes.into_iter());
        for _ in 0..n {
            for slot in &slots {
                match *slot {
                    None => inputs.extend(number.next()),
                    Some(k) => {
                        let order = &level_orders[k];
                        let hot = code.next().map(|c| order[c as usize] as usize);
                        inputs.extend((0..order.len()).map(|l| f32::from(u8::from(Some(l) == hot))));
                    }
                }
            }
        }
        inputs
    };
    let (targets, target_shape) = match options.targets {
        Targets::Classes => {
            (DataVec::I64(class_codes.iter().map(|&c| i64::from(class_order[c as usize])).collect()), &[][..])
        }
        Targets::Real => (DataVec::F32(reals), &[1][..]),
    };
    let dataset = InMemoryDataset::read_from(path, inputs, &[width], targets, target_shape)?;
    Ok(CsvTable { dataset, schema: Schema { columns, target: options.target.clone(), classes }, skipped_rows })
}

/// Whether a cell holds nothing but whitespace, as `str::trim` sees it;
/// a cell starting with an ASCII character that is not one is decided at
/// once, as most are.
fn blank(cell: &[u8]) -> bool {
    match cell.first() {
        None => true,
        Some(b) if b.is_ascii() && !b.is_ascii_whitespace() => false,
        _ => std::str::from_utf8(cell).is_ok_and(|c| c.trim().is_empty()),
    }
}

/// `text` without surrounding whitespace, as `str::trim`, with no
/// Unicode work for a cell that starts and ends with a printable ASCII
/// character, as most do.
fn trim(text: &str) -> &str {
    let bare = |b: Option<&u8>| b.is_some_and(u8::is_ascii_graphic);
    if bare(text.as_bytes().first()) && bare(text.as_bytes().last()) { text } else { text.trim() }
}

/// The records of `input`, read through the csv crate's `BufReader`; the
/// header is the first record, and a ragged row is left for the caller to
/// name.
fn records<R: Read>(input: R, delimiter: u8) -> ::csv::Reader<R> {
    ReaderBuilder::new()
        .delimiter(delimiter)
        .has_headers(false)
        .flexible(true)
        .buffer_capacity(1 << 16)
        .from_reader(input)
}

/// `text` as the nearest f32, rounded once from the decimal (read as f64
/// first, a number just past the midpoint of two f32s can round twice, to
/// the wrong one), or why it is not one.
fn number(text: &str) -> Result<f32, &'static str> {
    match text.parse::<f32>() {
        Ok(v) if v.is_finite() => Ok(v),
        // Digits that overflow, not the words `inf` or `infinity`.
        Ok(v) if v.is_infinite() && !text.bytes().any(|b| b.is_ascii_alphabetic() && !matches!(b, b'e' | b'E')) => {
            Err("is beyond f32's range (±3.4e38)")
        }
        _ => Err("is not a number"),
    }
}

/// The distinct texts of a categorical column or of the class labels,
/// each held once and numbered as first met, so that a row keeps a code
/// and not its text; or, from a schema, a fixed set that no other text
/// may join.
#[derive(Debug, Default)]
struct Codes {
    ids: HashMap<String, u32>,
    texts: Vec<String>,
    fixed: bool,
}

impl Codes {
    /// `texts`, numbered in their order, and no others.
    fn fixed(texts: &[String]) -> Self {
        let ids = texts.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
        Codes { ids, texts: texts.to_vec(), fixed: true }
    }

    /// `text`'s code, a new one for a text not met before; `None` for one
    /// a fixed set lacks.
    fn code(&mut self, text: &str) -> Option<u32> {
        if let Some(&id) = self.ids.get(text) {
            return Some(id);
        }
        if self.fixed {
            return None;
        }
        let id = self.texts.len() as u32;
        self.ids.insert(text.to_owned(), id);
        self.texts.push(text.to_owned());
        Some(id)
    }

    /// The texts in order and, for each code, its place in that order: a
    /// fixed set's order, else sorted numerically when every text is a
    /// number (so `2` comes before `10`), as text otherwise.
    fn into_sorted(self) -> (Vec<String>, Vec<u32>) {
        let mut order: Vec<u32> = (0..self.texts.len() as u32).collect();
        if !self.fixed {
            let texts = &self.texts;
            order.sort_by(|&a, &b| texts[a as usize].cmp(&texts[b as usize]));
            let values: Option<Vec<f64>> =
                texts.iter().map(|t| t.parse::<f64>().ok().filter(|v| v.is_finite())).collect();
            if let Some(values) = values {
                // Stable: texts of one value (`1`, `1.0`) keep their text order.
                order.sort_by(|&a, &b| values[a as usize].total_cmp(&values[b as usize]));
            }
        }
        let mut place = vec![0; order.len()];
        for (at, &code) in order.iter().enumerate() {
            place[code as usize] = at as u32;
        }
        let mut texts: Vec<Option<String>> = self.texts.into_iter().map(Some).collect();
        (order.iter().map(|&c| texts[c as usize].take().unwrap_or_default()).collect(), place)
    }
}

/// Where records lie in the file, worked out only on the way to an error
/// so the reading loop pays nothing for it. The csv crate places a record
/// where its read began, before any blank lines, and counts lines by `\n`
/// alone, reaching a CRLF's `\n` only on the next read; rows here are
/// lines as an editor counts them (`\n`, `\r\n` and a lone `\r`).
struct Rows<'a> {
    path: &'a Path,
    delimiter: u8,
}

impl Rows<'_> {
    /// The error for the record whose read began at byte `start`:
    /// `problem` after its row, or a quoted field left open to the end of
    /// the file, when that is what the record is.
    fn error(&self, start: u64, problem: &str) -> DataError {
        let row = self.line(start).map_or_else(|| "?".to_owned(), |l| l.to_string());
        let problem = if self.unclosed(start) { ": a quoted field is not closed" } else { problem };
        DataError::format(self.path, format!("row {row}{problem}"))
    }

    /// The file again, when it is a plain file: a pipe cannot be read
    /// twice, and opening a FIFO again would wait for a writer.
    fn reopen(&self) -> Option<File> {
        std::fs::metadata(self.path).ok().filter(std::fs::Metadata::is_file)?;
        File::open(self.path).ok()
    }

    /// The line (1-based) that the record read from byte `start` begins
    /// on, past the blank lines it skipped.
    fn line(&self, start: u64) -> Option<usize> {
        let mut file = BufReader::new(self.reopen()?);
        let (mut line, mut previous, mut at) = (1, 0u8, 0u64);
        let mut buffer = vec![0; 1 << 16];
        loop {
            let n = file.read(&mut buffer).ok()?;
            if n == 0 {
                return Some(line);
            }
            for &b in &buffer[..n] {
                if at >= start && b != b'\n' && b != b'\r' {
                    return Some(line);
                }
                if b == b'\r' || (b == b'\n' && previous != b'\r') {
                    line += 1;
                }
                (previous, at) = (b, at + 1);
            }
        }
    }

    /// Whether the record read from byte `start` runs to the end of the
    /// file inside a quoted field, which the csv crate takes without a
    /// word. Read again with a line break and a NUL after it, a closed
    /// record is followed by another (the next row, or the NUL's); an
    /// open one takes both into its field.
    fn unclosed(&self, start: u64) -> bool {
        let Some(mut file) = self.reopen() else { return false };
        if file.seek(SeekFrom::Start(start)).is_err() {
            return false;
        }
        let mut reader = records(file.chain(&b"\n\0"[..]), self.delimiter);
        let mut record = ByteRecord::new();
        matches!(reader.read_byte_record(&mut record), Ok(true))
            && matches!(reader.read_byte_record(&mut record), Ok(false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Dataset;

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
            (
                "target.csv",
                "a,b,y\n1,2,0\n",
                CsvOptions::classes("z"),
                "no column named `z` (the header has: `a`, `b`, `y`)",
            ),
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
    fn rows_count_lines_and_bad_bytes_name_theirs() {
        let path = file("quoted.csv", "n,a,y\n\"one\ntwo\",1,0\n1,2,3,4\n");
        let err = read_csv(&path, &CsvOptions::classes("y").features(&["a"])).expect_err("ragged").to_string();
        assert!(err.contains("quoted.csv") && err.contains("row 4: 4 fields, but the header has 3"), "{err}");
        let path = file("latin1.csv", "");
        std::fs::write(&path, b"a,y\n1,0\n2,\xe9\n").expect("written");
        let err = read_csv(&path, &CsvOptions::classes("y")).expect_err("not UTF-8").to_string();
        assert!(err.contains("latin1.csv") && err.contains("row 3: not UTF-8 text"), "{err}");
        let err = read_csv(&file("blank.csv", "\n\n"), &CsvOptions::classes("y")).expect_err("empty").to_string();
        assert!(err.contains("blank.csv") && err.contains("the file is empty: no header row"), "{err}");
    }

    #[test]
    fn a_repeated_header_name_is_an_error_naming_both_columns() {
        // Both inputs read the first `a` column before.
        let err = read_csv(&file("twice.csv", "a,b,a,y\n1,2,3,0\n"), &CsvOptions::classes("y"))
            .expect_err("two columns named a")
            .to_string();
        assert!(err.contains("twice.csv") && err.contains("columns 1 and 3 of the header are both named `a`"), "{err}");
        // Columns without a name (a pandas index, trailing delimiters) are
        // no repeat; each reads as itself, and none can be picked by name.
        let path = file("unnamed.csv", ",a,,y\n0,1,2,0\n");
        let t = read_csv(&path, &CsvOptions::classes("y")).expect("reads");
        assert_eq!(t.dataset.batch(&[0]).inputs.to_vec::<f32>().expect("f32"), [0.0, 1.0, 2.0]);
        let err = read_csv(&path, &CsvOptions::classes("y").features(&["", "a"])).expect_err("which one").to_string();
        assert!(err.contains("columns 1 and 3 of the header have no name"), "{err}");
    }

    #[test]
    fn a_number_beyond_f32_is_an_error_and_a_tiny_one_rounds() {
        let err = read_csv(&file("huge.csv", "a,b,y\n1,2,0\n3,-1e39,1\n"), &CsvOptions::classes("y"))
            .expect_err("1e39 is no f32")
            .to_string();
        assert!(err.contains("huge.csv: row 3, column `b`: `-1e39` is beyond f32's range"), "{err}");
        let err = read_csv(&file("huge_y.csv", "a,y\n1,1e39\n"), &CsvOptions::real("y"))
            .expect_err("1e39 is no f32")
            .to_string();
        assert!(err.contains("huge_y.csv: row 2, column `y`: `1e39` is beyond f32's range"), "{err}");
        // Underflow rounds to the nearest f32, a subnormal or zero, as NumPy does.
        let t = read_csv(&file("tiny.csv", "a,b,y\n1e-40,1e-50,0\n"), &CsvOptions::classes("y")).expect("reads");
        assert_eq!(t.dataset.batch(&[0]).inputs.to_vec::<f32>().expect("f32"), [1e-40, 0.0]);
    }

    #[test]
    fn numbers_round_once_to_the_nearest_f32() {
        // Just above the midpoint of 1 and the next f32: read as f64 first,
        // it rounds to the midpoint and then, ties to even, down to 1.
        let t = read_csv(&file("mid.csv", "a,y\n1.000000059604644775390625000000001,0\n"), &CsvOptions::classes("y"))
            .expect("reads");
        assert_eq!(t.dataset.batch(&[0]).inputs.to_vec::<f32>().expect("f32"), [1.0 + f32::EPSILON]);
    }

    #[test]
    fn header_names_are_trimmed_like_cells() {
        let t = read_csv(&file("spaced.csv", "id, b , y\n1, 2, 0\n"), &CsvOptions::classes("y")).expect("reads");
        assert_eq!(t.schema.input_names(), ["id", "b"]);
        let err = read_csv(&file("spaced.csv", "id, b , y\n1, 2, 0\n"), &CsvOptions::classes("label"))
            .expect_err("no label")
            .to_string();
        assert!(err.contains("no column named `label` (the header has: `id`, `b`, `y`)"), "{err}");
    }

    #[test]
    fn quotes_line_ends_and_rows_as_rfc_4180_writes_them() {
        // CRLF, a quoted delimiter and quotes, a quoted line break, blank
        // lines, a lone CR, a BOM; rows are counted in lines.
        let text = "\u{feff}name,x,y\r\n\"a, \"\"b\"\"\",1,0\r\n\r\n\"two\nlines\",2,1\rc,3,0\n";
        let t =
            read_csv(&file("rfc.csv", text), &CsvOptions::classes("y").features(&["name", "x"]).categorical(&["name"]))
                .expect("reads");
        assert_eq!(t.schema.input_names(), ["name=a, \"b\"", "name=c", "name=two\nlines", "x"]);
        assert_eq!(t.dataset.len(), 3);
        let row = |text: &str, want: &str| {
            let options = CsvOptions::real("y").features(&["x"]);
            let err = read_csv(&file("rows.csv", text), &options).expect_err(want).to_string();
            assert!(err.contains(want), "{text:?}: {err}");
        };
        row("n,x,y\r\na,1,0\r\n\r\nb,2,z\r\n", "row 4, column `y`: `z` is not a number");
        row("n,x,y\ra,1,0\rb,2,z\r", "row 3, column `y`: `z` is not a number");
        row("n,x,y\n\"a\n\nb\",1,0\nc,3,z\n", "row 5, column `y`: `z` is not a number");
        row("n,x,y\na,1,\"0\n", "row 2: a quoted field is not closed");
        row("n,x,y\n\"a,1,0\nb,2,3\n", "row 2: a quoted field is not closed");
        let semi =
            read_csv(&file("semi.csv", "x;y\n1,5;0\n"), &CsvOptions { delimiter: b';', ..CsvOptions::real("y") });
        assert!(semi.expect_err("a decimal comma").to_string().contains("`1,5` is not a number"));
        let quote = read_csv(&file("quote.csv", "x\"y\n"), &CsvOptions { delimiter: b'"', ..CsvOptions::real("y") });
        assert!(quote.expect_err("a quote").to_string().contains("not an ASCII character other than"));
    }
}
