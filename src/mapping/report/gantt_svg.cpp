// Gantt chart rendering.
#include "mapping/report/gantt_svg.hpp"

#include <algorithm>

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
}  // namespace

std::string gantt_svg(const Evaluator& ev, const Mapping& m, const Schedule& s) {
  const System& sys = ev.system();
  const int rows = static_cast<int>(s.devices.size());
  const double width = 1000, left = 170, row_h = 22, top = 30;
  const double span = std::max(s.makespan, 1e-12);
  const double height = top + rows * row_h + 40;
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n",
      width + left + 20, height);
  out += fmt::format(
      "<text x=\"{}\" y=\"18\">{} on {}: {:.4f} ms (blue compute, orange "
      "communication, grey weight streaming)</text>\n",
      left, escape(ev.workload().name), escape(sys.name), s.makespan * 1e3);
  std::vector<std::string> label(rows);
  for (std::size_t g = 0; g < m.groups.size(); ++g) {
    for (int d = 0; d < m.groups[g].size; ++d) {
      const int dev = m.groups[g].first_device + d;
      if (dev < rows)
        label[dev] = fmt::format("dev{} G{} {}", dev, g, sys.designs[m.groups[g].design].id);
    }
  }
  for (int r = 0; r < rows; ++r) {
    const double y = top + r * row_h;
    out += fmt::format("<text x=\"4\" y=\"{}\">{}</text>\n", y + 15, escape(label[r]));
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f4f4f4\"/>\n",
                       left, y + 2, width, row_h - 4);
    for (const Interval& iv : s.devices[r]) {
      const double x = left + iv.start / span * width;
      const double w = std::max(0.5, (iv.end - iv.start) / span * width);
      const char* color = iv.kind == Interval::Kind::Compute ? "#4878d0"
                          : iv.kind == Interval::Kind::Comm  ? "#ee854a"
                                                             : "#999999";
      const double inset = iv.kind == Interval::Kind::Compute ? 2 : 7;
      out += fmt::format(
          "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"{}\">"
          "<title>{} {:.4f}-{:.4f} ms</title></rect>\n",
          x, y + inset, w, row_h - 2 * inset, color, escape(ev.workload().layers[iv.layer].name),
          iv.start * 1e3, iv.end * 1e3);
    }
  }
  const double axis = top + rows * row_h + 14;
  for (int t = 0; t <= 10; ++t) {
    const double x = left + t * width / 10;
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:.3g}</text>\n", x,
                       axis, span * 1e3 * t / 10);
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\">ms</text>\n</svg>\n", left + width + 4, axis);
  return out;
}

}  // namespace orchid::mapping
