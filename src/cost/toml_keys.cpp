#include "cost/toml_keys.hpp"

#include <algorithm>

#include "util/error.hpp"
#include "util/printable.hpp"

namespace orchid {

void reject_unknown_keys(const toml::table& table,
                         const std::function<bool(const std::string&)>& known,
                         const std::string& file, const std::string& where,
                         const std::string& key_prefix) {
  for (const auto& [k, v] : table) {
    const std::string key(k.str());
    if (known(key)) continue;
    const auto& src = v.source();
    const std::string at = src.begin ? fmt::format("{}:{}", file, src.begin.line) : file;
    fail("{}: {}unknown key '{}{}'", at, where.empty() ? "" : where + ": ", key_prefix,
         printable(key));
  }
}

void reject_unknown_keys(const toml::table& table, std::initializer_list<std::string_view> keys,
                         const std::string& file, const std::string& where) {
  reject_unknown_keys(
      table,
      [&](const std::string& key) {
        return std::find(keys.begin(), keys.end(), key) != keys.end();
      },
      file, where);
}

}  // namespace orchid
