#include "templates/image_layout.hpp"

#include "templates/layer_writer.hpp"

#include <nlohmann/json.hpp>

namespace sandboxd::templates {
namespace {

using json = nlohmann::json;

bool is_hex64(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// "sha256:<hex>" -> hex; invalid_argument otherwise.
result<std::string> digest_hex(const json& v, const std::string& where) {
  if (!v.is_string())
    return make_error(errc::invalid_argument, where + " has no digest");
  const std::string d = v.get<std::string>();
  if (d.rfind("sha256:", 0) != 0 || !is_hex64(d.substr(7)))
    return make_error(errc::invalid_argument,
                      where + " names digest '" + d.substr(0, 80) +
                        "'; an image import takes sha256:<64 lowercase hex digits> only");
  return d.substr(7);
}

result<json> read_json(const archive_file& read, const std::string& path, const std::string& what) {
  auto text = read(path);
  if (!text)
    return make_error(errc::invalid_argument,
                      "the image archive has no " + path + " (" + what + ")");
  json j = json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object() && !j.is_array())
    return make_error(errc::invalid_argument, path + " in the image archive is not JSON");
  return j;
}

std::string text_of(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}

// The image config's defaults (OCI image-spec config.md; docker's is the same shape).
result<void> read_config(const json& cfg, image_plan& plan) {
  if (!cfg.is_object())
    return make_error(errc::invalid_argument, "the image config is not a JSON object");
  auto c = cfg.find("config");
  if (c == cfg.end() || c->is_null())
    return {};
  if (!c->is_object())
    return make_error(errc::invalid_argument, "the image config's `config` is not an object");
  if (auto env = c->find("Env"); env != c->end() && env->is_array())
    for (const auto& e : *env) {
      if (!e.is_string())
        return make_error(errc::invalid_argument, "the image config's Env holds a non-string");
      const std::string s = e.get<std::string>();
      const auto eq = s.find('=');
      if (eq == 0 || s.find('\0') != std::string::npos)
        return make_error(errc::invalid_argument,
                          "the image config's Env entry '" + s.substr(0, 80) + "' has no name");
      if (eq == std::string::npos)
        plan.env.emplace_back(s, "");
      else
        plan.env.emplace_back(s.substr(0, eq), s.substr(eq + 1));
    }
  plan.working_directory = text_of(*c, "WorkingDir");
  plan.user = text_of(*c, "User");
  for (const char* key : {"Entrypoint", "Cmd"})
    if (auto v = c->find(key); v != c->end() && v->is_array())
      for (const auto& a : *v)
        if (a.is_string())
          plan.command.push_back(a.get<std::string>());
  return {};
}

bool is_layer_type(const std::string& t) {
  static const char* ok[] = {"application/vnd.oci.image.layer.v1.tar",
                             "application/vnd.oci.image.layer.v1.tar+gzip",
                             "application/vnd.oci.image.layer.v1.tar+zstd",
                             "application/vnd.docker.image.rootfs.diff.tar.gzip",
                             "application/vnd.docker.image.rootfs.diff.tar"};
  for (const char* o : ok)
    if (t == o)
      return true;
  return false;
}

constexpr const char* k_index_type = "application/vnd.oci.image.index.v1+json";
constexpr const char* k_docker_list = "application/vnd.docker.distribution.manifest.list.v2+json";

result<image_plan> plan_oci(const archive_file& read, const json& index) {
  image_plan plan;
  plan.kind = "oci";
  json current = index;
  for (int depth = 0;; ++depth) {
    if (depth > 4)
      return make_error(errc::invalid_argument, "the image index nests more than 4 indexes");
    auto m = current.find("manifests");
    if (m == current.end() || !m->is_array() || m->empty())
      return make_error(errc::invalid_argument, "the image index lists no manifest");
    const json* pick = &(*m)[0];
    if (m->size() > 1) {
      pick = nullptr;
      for (const auto& e : *m) {
        auto p = e.find("platform");
        if (p != e.end() && p->is_object() && text_of(*p, "os") == "linux" &&
            text_of(*p, "architecture") == "amd64") {
          pick = &e;
          break;
        }
      }
      if (!pick)
        return make_error(errc::invalid_argument,
                          "the image index lists " + std::to_string(m->size()) +
                            " manifests and none for linux/amd64; import one image");
    }
    auto hex = digest_hex(pick->value("digest", json()), "a manifest of the image index");
    if (!hex)
      return hex.err();
    const std::string path = "blobs/sha256/" + hex.value();
    auto next = read_json(read, path, "a manifest the index names");
    if (!next)
      return next.err();
    plan.checked.push_back({path, hex.value()});
    const std::string type = text_of(*pick, "mediaType");
    if (type == k_index_type || type == k_docker_list || next->contains("manifests")) {
      current = std::move(next).value();
      continue;
    }
    current = std::move(next).value();
    break;
  }
  auto cfg =
    digest_hex(current.contains("config") ? current["config"].value("digest", json()) : json(),
               "the image manifest's config");
  if (!cfg)
    return cfg.err();
  const std::string cfg_path = "blobs/sha256/" + cfg.value();
  auto config = read_json(read, cfg_path, "the image config");
  if (!config)
    return config.err();
  plan.checked.push_back({cfg_path, cfg.value()});
  auto layers = current.find("layers");
  if (layers == current.end() || !layers->is_array())
    return make_error(errc::invalid_argument, "the image manifest lists no layers");
  for (const auto& l : *layers) {
    const std::string type = text_of(l, "mediaType");
    if (!is_layer_type(type))
      return make_error(errc::invalid_argument, "the image manifest lists a layer of media type '" +
                                                  type.substr(0, 100) +
                                                  "'; a layer must be a tar (plain, gzip or zstd)");
    auto hex = digest_hex(l.value("digest", json()), "a layer of the image manifest");
    if (!hex)
      return hex.err();
    plan.layers.push_back({"blobs/sha256/" + hex.value(), hex.value()});
  }
  if (auto r = read_config(config.value(), plan); !r)
    return r.err();
  return plan;
}

result<image_plan> plan_docker(const archive_file& read, const json& manifest) {
  image_plan plan;
  plan.kind = "docker";
  if (!manifest.is_array() || manifest.empty() || !manifest[0].is_object())
    return make_error(errc::invalid_argument, "manifest.json of the image archive lists no image");
  if (manifest.size() > 1)
    return make_error(errc::invalid_argument, "the docker archive holds " +
                                                std::to_string(manifest.size()) +
                                                " images; save one image per archive");
  const json& m = manifest[0];
  const std::string cfg_path = text_of(m, "Config");
  if (!split_entry_path(cfg_path, {}) || cfg_path.empty())
    return make_error(errc::invalid_argument, "manifest.json names no usable Config");
  auto config = read_json(read, cfg_path, "the image config");
  if (!config)
    return config.err();
  auto layers = m.find("Layers");
  if (layers == m.end() || !layers->is_array())
    return make_error(errc::invalid_argument, "manifest.json lists no Layers");
  std::vector<std::string> diff_ids;
  if (auto rootfs = config->find("rootfs"); rootfs != config->end() && rootfs->is_object())
    if (auto d = rootfs->find("diff_ids"); d != rootfs->end() && d->is_array())
      for (const auto& id : *d) {
        auto hex = digest_hex(id, "a diff id of the image config");
        if (!hex)
          return hex.err();
        diff_ids.push_back(hex.value());
      }
  if (diff_ids.size() != layers->size())
    return make_error(errc::invalid_argument, "the image config has " +
                                                std::to_string(diff_ids.size()) + " diff ids for " +
                                                std::to_string(layers->size()) + " layers");
  for (std::size_t i = 0; i < layers->size(); ++i) {
    const json& l = (*layers)[i];
    const std::string path = l.is_string() ? l.get<std::string>() : "";
    if (path.empty() || !split_entry_path(path, {}))
      return make_error(errc::invalid_argument,
                        "manifest.json names layer '" + path.substr(0, 100) + "'; not a path");
    plan.layers.push_back({path, diff_ids[i]});
  }
  if (auto r = read_config(config.value(), plan); !r)
    return r.err();
  return plan;
}

} // namespace

result<image_plan> plan_image(const archive_file& read) {
  if (read("index.json")) {
    auto index = read_json(read, "index.json", "the OCI image index");
    if (!index)
      return index.err();
    if (!index->is_object())
      return make_error(errc::invalid_argument, "index.json is not a JSON object");
    return plan_oci(read, index.value());
  }
  if (read("manifest.json")) {
    auto manifest = read_json(read, "manifest.json", "the docker image manifest");
    if (!manifest)
      return manifest.err();
    return plan_docker(read, manifest.value());
  }
  return make_error(errc::invalid_argument,
                    "the archive is neither an OCI image layout (index.json) nor a docker save "
                    "archive (manifest.json); import a root filesystem tarball as --format rootfs");
}

} // namespace sandboxd::templates
