// Configure steps of the runnable families, one file each in this folder.
#pragma once

namespace kiln {

struct ArchConfig;

void configure_llama(ArchConfig& c);
void configure_qwen2(ArchConfig& c);
void configure_qwen3(ArchConfig& c);
void configure_smollm3(ArchConfig& c);
void configure_gemma(ArchConfig& c);
void configure_gemma2(ArchConfig& c);
void configure_gemma3(ArchConfig& c);
void configure_granite(ArchConfig& c);
void configure_olmo2(ArchConfig& c);
void configure_phi3(ArchConfig& c);
void configure_starcoder2(ArchConfig& c);

}  // namespace kiln
