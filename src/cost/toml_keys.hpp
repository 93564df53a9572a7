// Strict TOML tables, shared by every config loader (device specs, systems, design
// libraries, workload cases): a key a table may not hold — often a misspelling such as
// `bandwith` — is an error naming the file, the line, the table and the key, never
// silently ignored.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

#include <toml++/toml.h>

namespace orchid {

// Fails on the first key of `table` that `known` does not accept: "FILE:LINE: WHERE:
// unknown key 'PREFIXKEY'" (WHERE left out when empty; PREFIX names a sub-table's keys,
// e.g. "model.").
void reject_unknown_keys(const toml::table& table,
                         const std::function<bool(const std::string&)>& known,
                         const std::string& file, const std::string& where,
                         const std::string& key_prefix = "");
// The same with the list of keys the table may hold.
void reject_unknown_keys(const toml::table& table, std::initializer_list<std::string_view> keys,
                         const std::string& file, const std::string& where);

}  // namespace orchid
