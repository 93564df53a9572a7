// SVG rendering of a GanttChart.
#include "mapping/report/gantt_chart.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace orchid::mapping {

namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

// At most `chars` characters of `text`, the last one an ellipsis when cut.
std::string fit(const std::string& text, int chars) {
  if (chars <= 0) return "";
  if (static_cast<int>(text.size()) <= chars) return text;
  if (chars < 3) return "";
  return text.substr(0, static_cast<std::size_t>(chars - 1)) + "\u2026";
}

struct Unit {
  const char* name;
  double scale;  // seconds -> unit
};

Unit unit_for(double span_s) {
  if (span_s >= 1) return {"s", 1};
  if (span_s >= 1e-3) return {"ms", 1e3};
  return {"\u00b5s", 1e6};
}

constexpr double kCharWidth = 6.2;  // of the 11 px sans-serif labels, roughly

}  // namespace

double round_tick_step(double span) {
  if (!(span > 0) || !std::isfinite(span)) return 1;
  const double raw = span / 8;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * power * 10 >= span) return m * power;
  }
  return 10 * power;
}

std::string render_gantt_svg(const GanttChart& c) {
  double span = c.end_s;
  for (const GanttRow& r : c.rows) {
    for (const GanttBar& b : r.bars) span = std::max(span, b.end_s);
  }
  for (const GanttArrow& a : c.arrows) span = std::max(span, a.end_s);
  span = std::max(span, 1e-9);
  const Unit unit = unit_for(span);
  const double step = round_tick_step(span * unit.scale);
  const double axis_end = std::ceil(span * unit.scale / step - 1e-9) * step / unit.scale;

  std::size_t longest = 0;
  for (const GanttRow& r : c.rows) longest = std::max(longest, r.label.size());
  const double left = std::min(260.0, 12 + kCharWidth * static_cast<double>(longest));
  const double width = 1000, row_h = 24, top = 58;
  const double rows_h = row_h * static_cast<double>(c.rows.size());
  const double height = top + rows_h + 34;
  auto x = [&](double t) { return left + t / axis_end * width; };
  auto row_mid = [&](int r) { return top + r * row_h + row_h / 2; };

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"6\" "
      "markerHeight=\"6\" orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\" "
      "fill=\"context-stroke\"/></marker></defs>\n",
      left + width + 40, height);
  out += fmt::format("<text x=\"4\" y=\"16\" font-size=\"13\">{}</text>\n", escape(c.title));

  // Legend: only the kinds that appear, in the chart's order.
  std::vector<bool> used(c.kinds.size(), false);
  for (const GanttRow& r : c.rows) {
    for (const GanttBar& b : r.bars) used[static_cast<std::size_t>(b.kind)] = true;
  }
  for (const GanttArrow& a : c.arrows) used[static_cast<std::size_t>(a.kind)] = true;
  double lx = left;
  for (std::size_t k = 0; k < c.kinds.size(); ++k) {
    if (!used[k]) continue;
    const bool arrow = std::any_of(c.arrows.begin(), c.arrows.end(),
                                   [&](const GanttArrow& a) { return a.kind == int(k); });
    if (arrow) {
      out += fmt::format(
          "<line x1=\"{:.1f}\" y1=\"33\" x2=\"{:.1f}\" y2=\"33\" stroke=\"{}\" "
          "stroke-width=\"1.5\" marker-end=\"url(#arrow)\"/>\n",
          lx, lx + 18, c.kinds[k].colour);
    } else {
      out +=
          fmt::format("<rect x=\"{:.1f}\" y=\"{}\" width=\"18\" height=\"{}\" fill=\"{}\"/>\n", lx,
                      c.kinds[k].thin ? 30 : 27, c.kinds[k].thin ? 6 : 12, c.kinds[k].colour);
    }
    out += fmt::format("<text x=\"{:.1f}\" y=\"37\">{}</text>\n", lx + 24, escape(c.kinds[k].name));
    lx += 24 + kCharWidth * static_cast<double>(c.kinds[k].name.size()) + 18;
  }

  // Grid and axis: round ticks in a unit that suits the span.
  const double axis_y = top + rows_h + 14;
  const int ticks = static_cast<int>(std::lround(axis_end * unit.scale / step));
  for (int i = 0; i <= ticks; ++i) {
    const double t = i * step / unit.scale;
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#dddddd\"/>\n"
        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4:g}</text>\n",
        x(t), top - 4, top + rows_h, axis_y, i * step);
  }
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">time ({})</text>\n",
                     left + width / 2, axis_y + 16, unit.name);

  for (std::size_t r = 0; r < c.rows.size(); ++r) {
    const GanttRow& row = c.rows[r];
    const double y = top + static_cast<double>(r) * row_h;
    out += fmt::format("<text x=\"4\" y=\"{:.1f}\">{}</text>\n", y + 16, escape(row.label));
    out += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{}\" "
        "fill=\"#f4f4f4\" fill-opacity=\"0.6\"/>\n",
        left, y + 2, width, row_h - 4);
    for (const GanttBar& b : row.bars) {
      const GanttKind& kind = c.kinds[static_cast<std::size_t>(b.kind)];
      const double bx = x(b.start_s);
      const double bw = std::max(0.5, x(b.end_s) - bx);
      const double inset = kind.thin ? 8 : 3;
      out += fmt::format(
          "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"{}\" "
          "stroke=\"white\" stroke-width=\"0.4\"><title>{}</title></rect>\n",
          bx, y + inset, bw, row_h - 2 * inset, kind.colour, escape(b.tooltip));
      const std::string text = fit(b.label, static_cast<int>((bw - 4) / kCharWidth));
      if (!kind.thin && !text.empty()) {
        out += fmt::format(
            "<text x=\"{:.2f}\" y=\"{:.1f}\" fill=\"white\" font-size=\"10\">{}</text>\n", bx + 2,
            y + 16, escape(text));
      }
    }
  }
  for (const GanttArrow& a : c.arrows) {
    out += fmt::format(
        "<line x1=\"{:.2f}\" y1=\"{:.1f}\" x2=\"{:.2f}\" y2=\"{:.1f}\" stroke=\"{}\" "
        "stroke-width=\"1.2\" marker-end=\"url(#arrow)\"><title>{}</title></line>\n",
        x(a.start_s), row_mid(a.from_row), x(a.end_s), row_mid(a.to_row),
        c.kinds[static_cast<std::size_t>(a.kind)].colour, escape(a.tooltip));
  }
  out += "</svg>\n";
  return out;
}

}  // namespace orchid::mapping
