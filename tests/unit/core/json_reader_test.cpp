#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "sim/core/input_error.hpp"
#include "sim/core/json_reader.hpp"

using namespace wallsim;
using nlohmann::json;

TEST_CASE("typed reads return values and defaults", "[core][json]") {
  const json doc = json::parse(R"({"a": 2, "b": {"c": true, "name": "ring"}})");
  JsonObject root(JsonNode(doc, "x.json", ""));
  CHECK(root.integer("a", 1, 8) == 2);
  CHECK(root.number_or("missing", 4.5) == 4.5);
  JsonObject b(root.at("b"));
  CHECK(b.boolean("c"));
  CHECK(b.choice("name", {"ring", "tree"}) == "ring");
  b.finish();
  root.finish();
}

TEST_CASE("errors name the file, the dotted path, the value and what is allowed", "[core][json]") {
  const json doc = json::parse(R"({"fabric": {"oversubscription": -1, "kind": "torus"}})");
  JsonObject root(JsonNode(doc, "c.json", ""));
  JsonObject fabric(root.at("fabric"));
  CHECK_THROWS_WITH(fabric.number("oversubscription", 1.0),
                    "c.json: fabric.oversubscription = -1: must be a number >= 1");
  CHECK_THROWS_WITH(fabric.choice("kind", {"fat_tree"}),
                    "c.json: fabric.kind = \"torus\": must be one of: fat_tree");
  CHECK_THROWS_WITH(root.at("nodes"), "c.json: nodes: is required but missing");
}

TEST_CASE("unknown keys are rejected with the allowed ones listed", "[core][json]") {
  const json doc = json::parse(R"({"gpus": 8, "gpu_per_node": 8})");
  JsonObject root(JsonNode(doc, "c.json", ""));
  root.integer("gpus");
  CHECK_THROWS_WITH(root.finish(), "c.json: gpu_per_node: unknown key (allowed here: gpus)");
}

TEST_CASE("integers must be integral and within range", "[core][json]") {
  const json doc = json::parse(R"({"a": 2.5, "b": 0, "c": 4.0})");
  JsonObject root(JsonNode(doc, "c.json", ""));
  CHECK_THROWS_AS(root.integer("a"), InputError);
  CHECK_THROWS_WITH(root.integer("b", 1), Catch::Contains("must be an integer >= 1"));
  CHECK(root.integer("c") == 4);
}

TEST_CASE("array items carry their index in the path", "[core][json]") {
  const json doc = json::parse(R"({"loads": [1, "x"]})");
  JsonObject root(JsonNode(doc, "c.json", ""));
  const auto items = root.at("loads").as_array();
  CHECK(items[0].as_number() == 1);
  CHECK_THROWS_WITH(items[1].as_number(), "c.json: loads[1] = \"x\": must be a number");
}

TEST_CASE("set overrides nested fields, parsing JSON values", "[core][json]") {
  json doc = json::parse(R"({"training": {"micro_batch": 1}})");
  apply_override(doc, "training.micro_batch=2");
  apply_override(doc, "simulation.network=flow");
  apply_override(doc, "parallel.order=\"tp-cp-ep-dp-pp\"");
  CHECK(doc["training"]["micro_batch"] == 2);
  CHECK(doc["simulation"]["network"] == "flow");
  CHECK(doc["parallel"]["order"] == "tp-cp-ep-dp-pp");
  CHECK_THROWS_AS(apply_override(doc, "training.micro_batch.x=1"), InputError);
  CHECK_THROWS_AS(apply_override(doc, "novalue"), InputError);
  // null removes the key, so its default applies; a path that is not there stays absent.
  apply_override(doc, "training.micro_batch=null");
  CHECK(doc["training"] == json::object());
  apply_override(doc, "model.layers=null");
  CHECK_FALSE(doc.contains("model"));
}

TEST_CASE("malformed JSON text names its source", "[core][json]") {
  CHECK_THROWS_WITH(parse_json_text("{\"a\": }", "bad.json"),
                    Catch::StartsWith("bad.json: invalid JSON"));
  CHECK_THROWS_WITH(load_json_file("/nonexistent/file.json"),
                    "/nonexistent/file.json: cannot open file");
}

TEST_CASE("a number too large for a double is bad input, not a crash", "[core][json]") {
  // Found by fuzz_text (fuzz/regressions/fuzz_text/json-number-overflow): nlohmann/json
  // reports the overflow as out_of_range, not as a parse error.
  CHECK_THROWS_AS(parse_json_text("22222E200792728629{", "big.json"), InputError);
  CHECK_THROWS_WITH(parse_json_text("1e999", "big.json"),
                    Catch::StartsWith("big.json: invalid JSON"));
}

// RFC 3629: a lead byte 0xC0/0xC1 is an overlong two-byte form, 0xED 0xA0.. encodes a UTF-16
// surrogate, 0xF4 0x90.. lies above U+10FFFF; a lone continuation byte (0x80) starts nothing.
TEST_CASE("require_utf8 accepts well-formed text and names the line of the first bad byte",
          "[core][utf8]") {
  CHECK_NOTHROW(require_utf8("plain\n", "a.yaml"));
  CHECK_NOTHROW(require_utf8("\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80", "a.yaml"));
  CHECK_THROWS_WITH(
      require_utf8("ok\nok\n\x80", "a.yaml"),
      Catch::Matchers::Contains("a.yaml:3") && Catch::Matchers::Contains("not UTF-8 (byte 7)"));
  CHECK_THROWS_AS(require_utf8("\xC0\xAF", "a"), InputError);          // overlong '/'
  CHECK_THROWS_AS(require_utf8("\xED\xA0\x80", "a"), InputError);      // surrogate U+D800
  CHECK_THROWS_AS(require_utf8("\xF4\x90\x80\x80", "a"), InputError);  // U+110000
  CHECK_THROWS_AS(require_utf8("\xE2\x82", "a"), InputError);          // cut short
}

TEST_CASE("an error about a string that is not UTF-8 is still reported", "[core][json]") {
  json doc;
  doc["name"] = std::string("bad\xFF");  // nlohmann::json holds the bytes; dump() would throw
  JsonObject root(JsonNode(doc, "x.json", ""));
  CHECK_THROWS_WITH(root.choice("name", {"ring"}), Catch::Matchers::Contains("x.json: name"));
}
