//! Draws latency against offered load from the CSV that runs append to: one line per workload
//! for p50 and one for p99, on a logarithmic latency axis, as SVG.

use std::collections::BTreeMap;
use std::path::Path;

use plotters::prelude::*;

/// One CSV row's figures that the chart needs.
struct Point {
    offered_per_second: f64,
    p50_ms: f64,
    p99_ms: f64,
}

/// Reads the CSV written by `--csv` and draws `latency against offered load` into `output`.
pub fn draw(csv: &Path, output: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(csv).map_err(|error| format!("{}: {error}", csv.display()))?;
    let mut series: BTreeMap<String, Vec<Point>> = BTreeMap::new();
    for line in text.lines().skip(1) {
        let fields: Vec<&str> = line.split(',').collect();
        if fields.len() < 11 {
            return Err(format!("a CSV row has {} fields, not 11: {line}", fields.len()));
        }
        let number = |index: usize| {
            fields[index]
                .parse::<f64>()
                .map_err(|_| format!("not a number: {}", fields[index]))
        };
        series.entry(fields[0].to_string()).or_default().push(Point {
            offered_per_second: number(1)?,
            p50_ms: number(6)? / 1_000.0,
            p99_ms: number(8)? / 1_000.0,
        });
    }
    let all = series.values().flatten();
    let max_rate = all.clone().map(|point| point.offered_per_second).fold(1.0, f64::max) * 1.05;
    let max_latency = all.clone().map(|point| point.p99_ms).fold(1.0, f64::max) * 2.0;
    let min_latency = all.map(|point| point.p50_ms).fold(f64::MAX, f64::min).max(0.01) / 2.0;
    let root = SVGBackend::new(output, (900, 560)).into_drawing_area();
    let fail = |error: &dyn std::fmt::Display| error.to_string();
    root.fill(&WHITE).map_err(|error| fail(&error))?;
    let mut chart = ChartBuilder::on(&root)
        .caption("dexd: latency against offered load (open loop)", ("sans-serif", 20))
        .margin(20)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..max_rate, (min_latency..max_latency).log_scale())
        .map_err(|error| fail(&error))?;
    chart
        .configure_mesh()
        .x_desc("offered requests per second")
        .y_desc("latency, ms (log)")
        .draw()
        .map_err(|error| fail(&error))?;
    for (index, (workload, points)) in series.iter().enumerate() {
        let color = Palette99::pick(index).to_rgba();
        for (label, pick, dashed) in [("p50", 0, false), ("p99", 1, true)] {
            let values: Vec<(f64, f64)> = points
                .iter()
                .map(|point| {
                    (
                        point.offered_per_second,
                        if pick == 0 { point.p50_ms } else { point.p99_ms },
                    )
                })
                .collect();
            let style = if dashed {
                color.stroke_width(1)
            } else {
                color.stroke_width(3)
            };
            chart
                .draw_series(LineSeries::new(values.clone(), style))
                .map_err(|error| fail(&error))?
                .label(format!("{workload} {label}"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
            chart
                .draw_series(values.iter().map(|value| Circle::new(*value, 3, color.filled())))
                .map_err(|error| fail(&error))?;
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|error| fail(&error))?;
    root.present().map_err(|error| fail(&error))?;
    Ok(())
}
