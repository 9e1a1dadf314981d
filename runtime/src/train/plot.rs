//! A small SVG line chart of the training curves: no plotting dependency,
//! no fonts to load, readable in any browser.

use std::fmt::Write;

/// One named series of `(x, y)` points, drawn in `color`.
pub struct Series<'a> {
    /// Legend text.
    pub name: &'a str,
    /// CSS color.
    pub color: &'a str,
    /// The points.
    pub points: Vec<(f64, f64)>,
}

/// Two panels side by side (for example loss and accuracy), each with its
/// own y axis and a shared x axis label.
pub fn two_panel_svg(x_label: &str, left: (&str, &[Series<'_>]), right: (&str, &[Series<'_>])) -> String {
    let (w, h) = (960.0, 400.0);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    svg.push_str(r#"<rect width="100%" height="100%" fill="white"/>"#);
    panel(&mut svg, 0.0, w / 2.0, h, x_label, left.0, left.1);
    panel(&mut svg, w / 2.0, w / 2.0, h, x_label, right.0, right.1);
    svg.push_str("</svg>\n");
    svg
}

fn nice_range(lo: f64, hi: f64) -> (f64, f64) {
    if !(lo.is_finite() && hi.is_finite()) {
        return (0.0, 1.0);
    }
    if (hi - lo).abs() < 1e-12 {
        return (lo - 0.5, hi + 0.5);
    }
    let pad = (hi - lo) * 0.05;
    (lo - pad, hi + pad)
}

fn panel(svg: &mut String, x0: f64, w: f64, h: f64, x_label: &str, title: &str, series: &[Series<'_>]) {
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
    // The x axis spans the data exactly (epochs); y gets a little margin.
    let (xmin, xmax) = if xmax > xmin { (xmin, xmax) } else { nice_range(xmin, xmax) };
    let (ymin, ymax) = nice_range(ymin, ymax);
    let px = |x: f64| x0 + ml + (x - xmin) / (xmax - xmin) * pw;
    let py = |y: f64| mt + ph - (y - ymin) / (ymax - ymin) * ph;
    let _ = write!(svg, r#"<text x="{}" y="18" font-size="14">{title}</text>"#, x0 + ml);
    let _ = write!(svg, r##"<rect x="{}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>"##, x0 + ml);
    for i in 0..=4 {
        let y = ymin + (ymax - ymin) * i as f64 / 4.0;
        let _ = write!(
            svg,
            r##"<line x1="{a}" x2="{b}" y1="{c}" y2="{c}" stroke="#eee"/><text x="{d}" y="{e}" text-anchor="end">{y:.3}</text>"##,
            a = x0 + ml,
            b = x0 + ml + pw,
            c = py(y),
            d = x0 + ml - 6.0,
            e = py(y) + 4.0
        );
        let x = xmin + (xmax - xmin) * i as f64 / 4.0;
        let digits = if xmax - xmin >= 8.0 { 0 } else { 1 };
        let _ = write!(svg, r#"<text x="{}" y="{}" text-anchor="middle">{x:.digits$}</text>"#, px(x), mt + ph + 16.0);
    }
    let _ = write!(svg, r#"<text x="{}" y="{}" text-anchor="middle">{x_label}</text>"#, x0 + ml + pw / 2.0, h - 10.0);
    for (k, s) in series.iter().enumerate() {
        let pts: Vec<String> =
            s.points.iter().filter(|p| p.1.is_finite()).map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y))).collect();
        let _ =
            write!(svg, r#"<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>"#, s.color, pts.join(" "));
        // The legend sits in the top margin, right-aligned, clear of the lines.
        let lx = x0 + ml + pw - 100.0 * (series.len() - k) as f64;
        let _ = write!(
            svg,
            r#"<line x1="{a}" x2="{b}" y1="14" y2="14" stroke="{c}" stroke-width="2"/><text x="{d}" y="18">{n}</text>"#,
            a = lx,
            b = lx + 20.0,
            c = s.color,
            d = lx + 25.0,
            n = s.name
        );
    }
}
