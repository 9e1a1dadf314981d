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
    // The x axis spans the data exactly (epochs); y ends on round ticks.
    let (xmin, xmax) = if xmax > xmin { (xmin, xmax) } else { (xmin - 0.5, xmin + 0.5) };
    let (ymin, ymax, ystep) = nice_axis(ymin, ymax);
    let (yticks, ydigits) = (((ymax - ymin) / ystep).round() as usize, decimals(ystep));
    let px = |x: f64| x0 + ml + (x - xmin) / (xmax - xmin) * pw;
    let py = |y: f64| mt + ph - (y - ymin) / (ymax - ymin) * ph;
    let _ = write!(svg, r#"<text x="{}" y="18" font-size="14">{title}</text>"#, x0 + ml);
    let _ = write!(svg, r##"<rect x="{}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>"##, x0 + ml);
    for i in 0..=yticks {
        let y = ymin + ystep * i as f64;
        let _ = write!(
            svg,
            r##"<line x1="{a}" x2="{b}" y1="{c}" y2="{c}" stroke="#eee"/><text x="{d}" y="{e}" text-anchor="end">{y:.ydigits$}</text>"##,
            a = x0 + ml,
            b = x0 + ml + pw,
            c = py(y),
            d = x0 + ml - 6.0,
            e = py(y) + 4.0
        );
    }
    for i in 0..=4 {
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
    }
}
