/* Placeholders that loaders substitute inside configuration strings. */
#ifndef OVX_CONFIG_TOKENS_H
#define OVX_CONFIG_TOKENS_H

/* Replaced by the directory of the running executable (static loader only). */
#define OVX_CONFIG_EXECUTABLE_DIR_TOKEN "${executable_dir}"

#endif /* OVX_CONFIG_TOKENS_H */
