//! The training curves as a small line chart, drawn once through a
//! [`Canvas`] that writes SVG (readable in any browser) or paints pixels
//! for a PNG (with a built-in bitmap font): no plotting dependency, no
//! fonts to load.

use std::fmt::Write;

/// One named series of `(x, y)` points, drawn in `color`.
pub struct Series<'a> {
    /// Legend text.
    pub name: &'a str,
    /// `#rrggbb` colour.
    pub color: &'a str,
    /// The points.
    pub points: Vec<(f64, f64)>,
}

/// Width and height of a chart, in SVG pixels.
const SIZE: (f64, f64) = (960.0, 400.0);

/// Two panels side by side (for example loss and accuracy), each with its
/// own y axis and a shared x axis label, as SVG.
pub fn two_panel_svg(x_label: &str, left: (&str, &[Series<'_>]), right: (&str, &[Series<'_>])) -> String {
    let (w, h) = SIZE;
    let mut svg = Svg(String::new());
    let _ = write!(
        svg.0,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    svg.0.push_str(r#"<rect width="100%" height="100%" fill="white"/>"#);
    panel(&mut svg, 0.0, w / 2.0, h, x_label, left.0, left.1);
    panel(&mut svg, w / 2.0, w / 2.0, h, x_label, right.0, right.1);
    svg.0.push_str("</svg>\n");
    svg.0
}

/// The same chart as a PNG file's bytes, at twice the SVG's size.
pub fn two_panel_png(x_label: &str, left: (&str, &[Series<'_>]), right: (&str, &[Series<'_>])) -> Vec<u8> {
    let (w, h) = SIZE;
    let mut r = Raster::new(w, h, 2.0);
    panel(&mut r, 0.0, w / 2.0, h, x_label, left.0, left.1);
    panel(&mut r, w / 2.0, w / 2.0, h, x_label, right.0, right.1);
    r.png()
}

/// Where a text's `x` is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Anchor {
    Start,
    Middle,
    End,
}

/// What a chart is drawn with, in SVG pixel coordinates.
trait Canvas {
    /// A line of `width` pixels through `points`.
    fn polyline(&mut self, points: &[(f64, f64)], color: &str, width: f64);
    /// A rectangle's outline.
    fn frame(&mut self, x: f64, y: f64, w: f64, h: f64, color: &str);
    /// Text of `size` pixels whose baseline is at `y`.
    fn text(&mut self, x: f64, y: f64, text: &str, anchor: Anchor, size: f64);
}

/// SVG elements appended to a string.
struct Svg(String);

impl Canvas for Svg {
    fn polyline(&mut self, points: &[(f64, f64)], color: &str, width: f64) {
        let pts: Vec<String> = points.iter().map(|&(x, y)| format!("{x:.1},{y:.1}")).collect();
        match points {
            [a, b] => {
                let _ = write!(
                    self.0,
                    r#"<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="{color}"{}/>"#,
                    a.0,
                    b.0,
                    a.1,
                    b.1,
                    if width == 1.0 { String::new() } else { format!(r#" stroke-width="{width}""#) }
                );
            }
            _ => {
                let _ = write!(
                    self.0,
                    r#"<polyline fill="none" stroke="{color}" stroke-width="{width}" points="{}"/>"#,
                    pts.join(" ")
                );
            }
        }
    }

    fn frame(&mut self, x: f64, y: f64, w: f64, h: f64, color: &str) {
        let _ = write!(self.0, r#"<rect x="{x}" y="{y}" width="{w}" height="{h}" fill="none" stroke="{color}"/>"#);
    }

    fn text(&mut self, x: f64, y: f64, text: &str, anchor: Anchor, size: f64) {
        let anchor = match anchor {
            Anchor::Start => "",
            Anchor::Middle => r#" text-anchor="middle""#,
            Anchor::End => r#" text-anchor="end""#,
        };
        let size = if size == 12.0 { String::new() } else { format!(r#" font-size="{size}""#) };
        let _ = write!(self.0, r#"<text x="{x}" y="{y}"{anchor}{size}>{text}</text>"#);
    }
}

/// Pixels on white, `scale` of them per SVG pixel: RGB rows, top first.
struct Raster {
    pixels: Vec<[u8; 3]>,
    width: u32,
    height: u32,
    scale: f64,
}

/// `#rrggbb` (or `#rgb`) as RGB; black for anything else.
fn rgb(color: &str) -> [u8; 3] {
    let hex = color.strip_prefix('#').unwrap_or("");
    let digit = |i: usize, n: usize| u8::from_str_radix(hex.get(i..i + n)?, 16).ok();
    let parsed = match hex.len() {
        6 => (|| Some([digit(0, 2)?, digit(2, 2)?, digit(4, 2)?]))(),
        3 => (|| Some([digit(0, 1)? * 17, digit(1, 1)? * 17, digit(2, 1)? * 17]))(),
        _ => None,
    };
    parsed.unwrap_or([0, 0, 0])
}

impl Raster {
    fn new(w: f64, h: f64, scale: f64) -> Self {
        let (pw, ph) = ((w * scale) as u32, (h * scale) as u32);
        Raster { pixels: vec![[255; 3]; pw as usize * ph as usize], width: pw, height: ph, scale }
    }

    /// Mixes `color` into pixel `(x, y)` by `coverage` in `[0, 1]`.
    fn blend(&mut self, x: i64, y: i64, color: [u8; 3], coverage: f64) {
        let (w, h) = (i64::from(self.width), i64::from(self.height));
        if coverage <= 0.0 || !(0..w).contains(&x) || !(0..h).contains(&y) {
            return;
        }
        let a = coverage.min(1.0);
        let p = &mut self.pixels[(y * w + x) as usize];
        for (c, &t) in p.iter_mut().zip(&color) {
            *c = (f64::from(*c) * (1.0 - a) + f64::from(t) * a).round() as u8;
        }
    }

    /// An anti-aliased segment: each pixel near it covered by how far its
    /// centre lies inside the stroke.
    fn segment(&mut self, a: (f64, f64), b: (f64, f64), color: [u8; 3], width: f64) {
        let s = self.scale;
        let (ax, ay, bx, by) = (a.0 * s, a.1 * s, b.0 * s, b.1 * s);
        let half = (width * s / 2.0).max(0.5);
        let (dx, dy) = (bx - ax, by - ay);
        let len2 = (dx * dx + dy * dy).max(1e-12);
        let (x0, x1) = ((ax.min(bx) - half - 1.0).floor() as i64, (ax.max(bx) + half + 1.0).ceil() as i64);
        let (y0, y1) = ((ay.min(by) - half - 1.0).floor() as i64, (ay.max(by) + half + 1.0).ceil() as i64);
        for y in y0..=y1 {
            for x in x0..=x1 {
                let (px, py) = (x as f64 + 0.5, y as f64 + 0.5);
                let t = (((px - ax) * dx + (py - ay) * dy) / len2).clamp(0.0, 1.0);
                let d = ((px - ax - t * dx).powi(2) + (py - ay - t * dy).powi(2)).sqrt();
                self.blend(x, y, color, half + 0.5 - d);
            }
        }
    }

    fn png(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut encoder = png::Encoder::new(&mut out, self.width, self.height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().expect("encoding to memory does not fail");
        writer.write_image_data(self.pixels.as_flattened()).expect("the buffer holds width x height pixels");
        writer.finish().expect("encoding to memory does not fail");
        out
    }
}

impl Canvas for Raster {
    fn polyline(&mut self, points: &[(f64, f64)], color: &str, width: f64) {
        let color = rgb(color);
        for pair in points.windows(2) {
            self.segment(pair[0], pair[1], color, width);
        }
    }

    fn frame(&mut self, x: f64, y: f64, w: f64, h: f64, color: &str) {
        self.polyline(&[(x, y), (x + w, y), (x + w, y + h), (x, y + h), (x, y)], color, 1.0);
    }

    fn text(&mut self, x: f64, y: f64, text: &str, anchor: Anchor, size: f64) {
        // A glyph is 5x7 units in a 6x8 cell; the cell is `size` tall.
        let unit = (size * self.scale / 8.0).round().max(1.0) as i64;
        let width = text.chars().count() as i64 * 6 * unit - unit;
        let left = (x * self.scale).round() as i64
            - match anchor {
                Anchor::Start => 0,
                Anchor::Middle => width / 2,
                Anchor::End => width,
            };
        let top = (y * self.scale).round() as i64 - 7 * unit;
        for (k, c) in text.chars().enumerate() {
            let rows = glyph(c);
            for (r, row) in rows.iter().enumerate() {
                for (col, bit) in row.bytes().enumerate() {
                    if bit == b'#' {
                        let (gx, gy) = (left + (k as i64 * 6 + col as i64) * unit, top + r as i64 * unit);
                        for dy in 0..unit {
                            for dx in 0..unit {
                                self.blend(gx + dx, gy + dy, [0, 0, 0], 1.0);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The 5x7 bitmap of `c` (upper case drawn as lower case; a box for a
/// character the font lacks).
fn glyph(c: char) -> [&'static str; 7] {
    let c = c.to_ascii_lowercase();
    FONT.iter().find(|(g, _)| *g == c).map_or(["#####", "#...#", "#...#", "#...#", "#...#", "#...#", "#####"], |g| g.1)
}

/// Digits, lower-case letters and the punctuation of numbers and metric
/// names.
#[rustfmt::skip]
const FONT: [(char, [&str; 7]); 48] = [
    (' ', [".....", ".....", ".....", ".....", ".....", ".....", "....."]),
    ('0', [".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."]),
    ('1', ["..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."]),
    ('2', [".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"]),
    ('3', ["#####", "...#.", "..#..", "...#.", "....#", "#...#", ".###."]),
    ('4', ["...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."]),
    ('5', ["#####", "#....", "####.", "....#", "....#", "#...#", ".###."]),
    ('6', ["..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."]),
    ('7', ["#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."]),
    ('8', [".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."]),
    ('9', [".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."]),
    ('.', [".....", ".....", ".....", ".....", ".....", ".##..", ".##.."]),
    ('-', [".....", ".....", ".....", "#####", ".....", ".....", "....."]),
    ('_', [".....", ".....", ".....", ".....", ".....", ".....", "#####"]),
    ('+', [".....", "..#..", "..#..", "#####", "..#..", "..#..", "....."]),
    ('/', [".....", "....#", "...#.", "..#..", ".#...", "#....", "....."]),
    (':', [".....", ".##..", ".##..", ".....", ".##..", ".##..", "....."]),
    ('(', ["..#..", ".#...", "#....", "#....", "#....", ".#...", "..#.."]),
    (')', ["..#..", "...#.", "....#", "....#", "....#", "...#.", "..#.."]),
    ('=', [".....", ".....", "#####", ".....", "#####", ".....", "....."]),
    ('%', ["##...", "##..#", "...#.", "..#..", ".#...", "#..##", "...##"]),
    ('²', [".##..", "...#.", "..#..", ".###.", ".....", ".....", "....."]),
    ('a', [".....", ".....", ".###.", "....#", ".####", "#...#", ".####"]),
    ('b', ["#....", "#....", "#.##.", "##..#", "#...#", "#...#", "####."]),
    ('c', [".....", ".....", ".###.", "#....", "#....", "#...#", ".###."]),
    ('d', ["....#", "....#", ".##.#", "#..##", "#...#", "#...#", ".####"]),
    ('e', [".....", ".....", ".###.", "#...#", "#####", "#....", ".###."]),
    ('f', ["..##.", ".#..#", ".#...", "###..", ".#...", ".#...", ".#..."]),
    ('g', [".....", ".####", "#...#", "#...#", ".####", "....#", ".###."]),
    ('h', ["#....", "#....", "#.##.", "##..#", "#...#", "#...#", "#...#"]),
    ('i', ["..#..", ".....", ".##..", "..#..", "..#..", "..#..", ".###."]),
    ('j', ["...#.", ".....", "..##.", "...#.", "...#.", "#..#.", ".##.."]),
    ('k', ["#....", "#....", "#..#.", "#.#..", "##...", "#.#..", "#..#."]),
    ('l', [".##..", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."]),
    ('m', [".....", ".....", "##.#.", "#.#.#", "#.#.#", "#...#", "#...#"]),
    ('n', [".....", ".....", "#.##.", "##..#", "#...#", "#...#", "#...#"]),
    ('o', [".....", ".....", ".###.", "#...#", "#...#", "#...#", ".###."]),
    ('p', [".....", "####.", "#...#", "#...#", "####.", "#....", "#...."]),
    ('q', [".....", ".####", "#...#", "#...#", ".####", "....#", "....#"]),
    ('r', [".....", ".....", "#.##.", "##..#", "#....", "#....", "#...."]),
    ('s', [".....", ".....", ".###.", "#....", ".###.", "....#", "####."]),
    ('t', [".#...", ".#...", "###..", ".#...", ".#...", ".#..#", "..##."]),
    ('u', [".....", ".....", "#...#", "#...#", "#...#", "#..##", ".##.#"]),
    ('v', [".....", ".....", "#...#", "#...#", "#...#", ".#.#.", "..#.."]),
    ('w', [".....", ".....", "#...#", "#...#", "#.#.#", "#.#.#", ".#.#."]),
    ('x', [".....", ".....", "#...#", ".#.#.", "..#..", ".#.#.", "#...#"]),
    ('y', [".....", ".....", "#...#", "#...#", ".####", "....#", ".###."]),
    ('z', [".....", ".....", "#####", "...#.", "..#..", ".#...", "#####"]),
];

/// The y axis over values `lo..=hi`: its bottom, top and tick step, the
/// step 1, 2 or 5 times a power of ten giving about five intervals, the
/// ends on multiples of it. Values that never go below zero (a loss, an
/// accuracy) get an axis that starts at zero or above.
fn nice_axis(lo: f64, hi: f64) -> (f64, f64, f64) {
    if !(lo.is_finite() && hi.is_finite()) {
        return (0.0, 1.0, 0.25);
    }
    let (lo, hi) = if hi - lo > 1e-12 * hi.abs().max(1.0) {
        (lo, hi)
    } else {
        // One value: a band around it, clear of zero when it is.
        let d = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        (if lo >= 0.0 { (lo - d).max(0.0) } else { lo - d }, hi + d)
    };
    let raw = (hi - lo) / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * magnitude).find(|&s| s >= raw * (1.0 - 1e-9)).unwrap_or(raw);
    ((lo / step + 1e-9).floor() * step, (hi / step - 1e-9).ceil() * step, step)
}

/// Decimals that print every multiple of `step` exactly.
fn decimals(step: f64) -> usize {
    (-step.log10().floor()).max(0.0) as usize
}

fn panel(c: &mut dyn Canvas, x0: f64, w: f64, h: f64, x_label: &str, title: &str, series: &[Series<'_>]) {
    let (ml, mr, mt, mb) = (60.0, 20.0, 30.0, 50.0);
    let (pw, ph) = (w - ml - mr, h - mt - mb);
    let all = series.iter().flat_map(|s| s.points.iter());
    let (mut xmin, mut xmax, mut ymin, mut ymax) = (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY, f64::NEG_INFINITY);
    for &(x, y) in all {
        xmin = xmin.min(x);
        xmax = xmax.max(x);
        if y.is_finite() {
            ymin = ymin.min(y);
            ymax = ymax.max(y);
        }
    }
    // The x axis spans the data exactly (epochs); y ends on round ticks.
    let (xmin, xmax) = match (xmin.is_finite(), xmax > xmin) {
        (false, _) => (0.0, 1.0),
        (true, true) => (xmin, xmax),
        (true, false) => (xmin - 0.5, xmin + 0.5),
    };
    let (ymin, ymax, ystep) = nice_axis(ymin, ymax);
    let (yticks, ydigits) = (((ymax - ymin) / ystep).round() as usize, decimals(ystep));
    let px = |x: f64| x0 + ml + (x - xmin) / (xmax - xmin) * pw;
    let py = |y: f64| mt + ph - (y - ymin) / (ymax - ymin) * ph;
    c.text(x0 + ml, 18.0, title, Anchor::Start, 14.0);
    for i in 0..=yticks {
        let y = ymin + ystep * i as f64;
        c.polyline(&[(x0 + ml, py(y)), (x0 + ml + pw, py(y))], "#eee", 1.0);
        c.text(x0 + ml - 6.0, py(y) + 4.0, &format!("{y:.ydigits$}"), Anchor::End, 12.0);
    }
    c.frame(x0 + ml, mt, pw, ph, "#888");
    // About four x intervals of 1, 2 or 5 times a power of ten, whole
    // numbers at least when the points are (epochs).
    let whole = series.iter().flat_map(|s| &s.points).all(|p| p.0.fract() == 0.0);
    let xstep = {
        let (_, _, step) = nice_axis(0.0, (xmax - xmin) * 5.0 / 4.0);
        if whole { step.max(1.0) } else { step }
    };
    let xdigits = decimals(xstep);
    let first = (xmin / xstep - 1e-9).ceil() as i64;
    for k in (first..).take_while(|&k| k as f64 * xstep <= xmax + 1e-9 * xstep).take(12) {
        let x = k as f64 * xstep;
        c.text(px(x), mt + ph + 16.0, &format!("{x:.xdigits$}"), Anchor::Middle, 12.0);
    }
    c.text(x0 + ml + pw / 2.0, h - 10.0, x_label, Anchor::Middle, 12.0);
    for (k, s) in series.iter().enumerate() {
        let pts: Vec<(f64, f64)> = s.points.iter().filter(|p| p.1.is_finite()).map(|&(x, y)| (px(x), py(y))).collect();
        c.polyline(&pts, s.color, 2.0);
        // The legend sits in the top margin, right-aligned, clear of the lines.
        let lx = x0 + ml + pw - 100.0 * (series.len() - k) as f64;
        c.polyline(&[(lx, 14.0), (lx + 20.0, 14.0)], s.color, 2.0);
        c.text(lx + 25.0, 18.0, s.name, Anchor::Start, 12.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_end_on_round_ticks_and_stay_above_zero_for_positive_values() {
        assert_eq!(nice_axis(0.013, 2.31), (0.0, 2.5, 0.5));
        let (lo, hi, step) = nice_axis(0.9, 0.99);
        assert!((lo - 0.9).abs() < 1e-12 && (hi - 1.0).abs() < 1e-12 && (step - 0.02).abs() < 1e-12);
        assert_eq!(nice_axis(0.0, 0.0), (0.0, 1.0, 0.2));
        assert_eq!(nice_axis(-3.0, 5.0), (-4.0, 6.0, 2.0));
        assert_eq!(nice_axis(f64::INFINITY, f64::NEG_INFINITY), (0.0, 1.0, 0.25));
        assert_eq!((decimals(0.5), decimals(0.02), decimals(2.0)), (1, 2, 0));
    }

    #[test]
    fn a_loss_curve_has_no_negative_ticks() {
        let loss = Series { name: "train", color: "red", points: vec![(1.0, 2.3), (2.0, 0.4), (3.0, 0.02)] };
        let acc = Series { name: "val", color: "blue", points: vec![(1.0, 0.61), (2.0, 0.93), (3.0, 0.985)] };
        let svg = two_panel_svg("epoch", ("loss", &[loss]), ("accuracy", &[acc]));
        assert!(!svg.contains(">-"), "a negative tick label: {svg}");
        assert!(svg.contains(">0.0<") && svg.contains(">2.5<"), "the loss axis runs from 0 to 2.5: {svg}");
        assert!(svg.contains(">1.0<"), "the accuracy axis ends at 1: {svg}");
        // Epochs 1 to 3 get whole ticks; an empty panel still draws.
        let x_labels: Vec<&str> =
            svg.split(r#"y="366" text-anchor="middle">"#).skip(1).map(|t| t.split('<').next().unwrap_or("")).collect();
        assert_eq!(x_labels, ["1", "2", "3", "1", "2", "3"]);
        assert!(two_panel_svg("epoch", ("loss", &[]), ("accuracy", &[])).ends_with("</svg>\n"));
    }

    #[test]
    fn the_png_draws_the_same_chart_in_pixels() {
        let loss = Series { name: "train", color: "#d62728", points: vec![(1.0, 2.3), (2.0, 0.4), (3.0, 0.02)] };
        let png = two_panel_png("epoch", ("loss", &[loss]), ("accuracy", &[]));
        let mut reader = png::Decoder::new(std::io::Cursor::new(png)).read_info().expect("a PNG");
        let mut data = vec![0; reader.output_buffer_size().expect("a size")];
        let frame = reader.next_frame(&mut data).expect("one frame");
        assert_eq!((frame.width, frame.height, frame.color_type), (1920, 800, png::ColorType::Rgb));
        let pixels = data[..frame.buffer_size()].chunks_exact(3);
        let count = |want: [u8; 3]| pixels.clone().filter(|p| *p == want).count();
        // The red curve, black text, and mostly white.
        assert!(count([0xd6, 0x27, 0x28]) > 500, "the curve is drawn");
        assert!(count([0, 0, 0]) > 500, "the labels are drawn");
        assert!(count([255, 255, 255]) > 1920 * 800 / 2);
        assert_eq!(rgb("#1f77b4"), [0x1f, 0x77, 0xb4]);
        assert_eq!((rgb("#888"), rgb("red")), ([0x88, 0x88, 0x88], [0, 0, 0]));
        assert!(FONT.iter().all(|(_, rows)| rows.iter().all(|r| r.len() == 5)));
    }
}
