// plot/svg_plot.hpp — small, dependency-free SVG charts for the
// example programs: line/scatter charts (loss curves, regression fits) and
// heatmaps (attention weights).
//
//   plot::LineChart chart;
//   chart.title("Nadaraya-Watson regression").x_label("x").y_label("y")
//        .line("Truth", xs, truth)
//        .line("Prediction", xs, predicted, {.dashed = true})
//        .scatter("Training samples", x_train, y_train, {.alpha = 0.5});
//   chart.save("regression.svg");
//
//   plot::Heatmap attention(query_count, key_count, weights);  // row-major
//   attention.row_labels(target_words).column_labels(source_words)
//            .x_label("Keys").y_label("Queries").value_limits(0, 1);
//   attention.save("attention.svg");
//
// Every picture is one self-contained SVG file (no scripts, no external
// fonts), written atomically. The parts are tagged so that tests and scripts
// can find them: <g class="series" data-name="Truth">, <g class="legend">,
// <g class="heatmap">, <g class="colorbar">. All text is XML-escaped; it must
// be UTF-8.
//
// This header gathers the parts, one file pair each: svg_scales (colours,
// colour maps, tick steps and labels), svg_line_plot (LineChart),
// svg_heatmap (Heatmap) and svg_document (the SVG text both charts write,
// and xml_escape).
#pragma once

#include "plot/svg_document.hpp"
#include "plot/svg_heatmap.hpp"
#include "plot/svg_line_plot.hpp"
#include "plot/svg_scales.hpp"
