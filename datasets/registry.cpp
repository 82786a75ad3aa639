#include "datasets/registry.h"

#include <algorithm>

#include "base/error.h"

namespace partita::datasets {

namespace {

// The recorded sums are those of the files the project's tests and example jobs read, the
// copies their provenance notes name; a sum left empty is one nobody here could compute
// without reaching the publisher (needs_first_sum, docs/datasets.md).
constexpr const char* kLinqsLicence =
    "no licence file; published by LINQS (UC Santa Cruz) for research use, with the citation below asked for";
constexpr const char* kLinqsCitation =
    "P. Sen, G. Namata, M. Bilgic, L. Getoor, B. Gallagher, T. Eliassi-Rad. Collective Classification in Network "
    "Data. AI Magazine 29(3), 2008.";
constexpr const char* kMovieLensLicence =
    "GroupLens terms of use (README in the archive): research use only, no commercial use without permission, "
    "redistribution only under the same terms, no implied endorsement, acknowledge it in publications";
constexpr const char* kMovieLensCitation =
    "F. M. Harper, J. A. Konstan. The MovieLens Datasets: History and Context. ACM Transactions on Interactive "
    "Intelligent Systems 5(4), 2015.";
constexpr const char* kRdfLicence =
    "no licence stated; the benchmark release of Ristoski et al., as the DGL project serves it for R-GCN";
constexpr const char* kRdfCitation =
    "P. Ristoski, G. K. D. de Vries, H. Paulheim. A Collection of Benchmark Datasets for Systematic Evaluations of "
    "Machine Learning on the Semantic Web. ISWC 2016.";

std::vector<NamedDataset> make_registry() {
  std::vector<NamedDataset> r;
  r.push_back({"cora", "Cora citation graph: 2,708 papers, 1,433 word features, 7 classes (LINQS)", "linqs",
               "https://linqs.org/datasets/#cora",
               {{"https://linqs-data.soe.ucsc.edu/public/lbc/cora.tgz", "", Unpack::archive}},
               {{"cora.content", "b8ebed0fd45e53995abafd1b70cf6a9fcc8f86abc5826d69b97fe6ca46e9c8ee"},
                {"cora.cites", "ec1a372391b7f0f60a6aff0084e8abd8f19f0faa7e1f2441a41c492042d5945e"}},
               kLinqsLicence, kLinqsCitation});
  r.push_back({"citeseer", "CiteSeer citation graph: 3,312 papers, 3,703 word features, 6 classes (LINQS)", "linqs",
               "https://linqs.org/datasets/#citeseer-doc-classification",
               {{"https://linqs-data.soe.ucsc.edu/public/lbc/citeseer.tgz", "", Unpack::archive}},
               {{"citeseer.content", ""}, {"citeseer.cites", ""}},
               kLinqsLicence, kLinqsCitation});
  r.push_back({"pubmed", "PubMed Diabetes citation graph: 19,717 papers, 500 TF-IDF features, 3 classes (LINQS)", "",
               "https://linqs.org/datasets/#pubmed-diabetes",
               {{"https://linqs-data.soe.ucsc.edu/public/Pubmed-Diabetes.tgz", "", Unpack::archive}},
               {{"data/Pubmed-Diabetes.NODE.paper.tab", ""}, {"data/Pubmed-Diabetes.DIRECTED.cites.tab", ""}},
               kLinqsLicence,
               "G. Namata, B. London, L. Getoor, B. Huang. Query-driven Active Surveying for Collective "
               "Classification. Workshop on Mining and Learning with Graphs (MLG), 2012."});
  r.push_back({"fb15k-237", "FB15k-237 knowledge graph: 14,541 entities, 237 relations, 310,116 triples", "triples",
               "https://www.microsoft.com/en-us/download/details.aspx?id=52312",
               {{"https://github.com/TimDettmers/ConvE/raw/master/FB15k-237.tar.gz", "", Unpack::archive}},
               {{"train.txt", "6e4c2782169af21e9743f3b1d200886f5d595bf6bc504ec1351720949c5cdfae"},
                {"valid.txt", "cf6309010852f6a8d47a45df830a426415d1ee6f7a3970a8376ff1fb81db4a5c"},
                {"test.txt", "5711cf41623ceb4eacc50eb6108a3ca6565c7492e3caaf82a3e355cc660d1574"}},
               "Microsoft Research Data License Agreement (FB15K-237 Knowledge Base Completion Dataset); derived "
               "from Freebase (CC BY 2.5)",
               "K. Toutanova, D. Chen. Observed versus Latent Features for Knowledge Base and Text Inference. "
               "Workshop on Continuous Vector Space Models and their Compositionality, 2015."});
  r.push_back({"wn18rr", "WN18RR knowledge graph: 40,943 WordNet synsets, 11 relations, 93,003 triples", "triples",
               "https://github.com/TimDettmers/ConvE",
               {{"https://github.com/TimDettmers/ConvE/raw/master/WN18RR.tar.gz", "", Unpack::archive}},
               {{"train.txt", ""}, {"valid.txt", ""}, {"test.txt", ""}},
               "WordNet 3.0 licence (Princeton University: use, copy and distribute with its copyright notice)",
               "T. Dettmers, P. Minervini, P. Stenetorp, S. Riedel. Convolutional 2D Knowledge Graph Embeddings. "
               "AAAI 2018."});
  r.push_back({"aifb", "AIFB RDF graph: entity classification of 176 persons into 4 research groups", "ntriples",
               "https://data.dws.informatik.uni-mannheim.de/rmlod/LOD_ML_Datasets/",
               {{"https://data.dgl.ai/dataset/aifb.tgz", "", Unpack::archive}},
               {{"aifb_stripped.nt.gz", "ba4191235456e09d8f12a2415f24273b8d7641ffee6001ca9340f02c04d77fea"},
                {"trainingSet.tsv", "5ed245d354691768fc3386f18c66331043317440ff8e2c0706353cb0d35cd73a"},
                {"testSet.tsv", "e384415e23ff4e001e1259810867dda61dfa2547851e9c0b9f130f40f2cb97c1"}},
               kRdfLicence, kRdfCitation});
  r.push_back({"mutag", "MUTAG RDF graph: entity classification of 340 molecules as mutagenic or not", "ntriples",
               "https://data.dws.informatik.uni-mannheim.de/rmlod/LOD_ML_Datasets/",
               {{"https://data.dgl.ai/dataset/mutag.tgz", "", Unpack::archive}},
               {{"mutag_stripped.nt.gz", ""}, {"trainingSet.tsv", ""}, {"testSet.tsv", ""}},
               kRdfLicence, kRdfCitation});
  r.push_back({"movielens-small", "MovieLens ml-latest-small: 100,836 ratings by 610 users of 9,742 movies",
               "movielens", "https://grouplens.org/datasets/movielens/latest/",
               {{"https://files.grouplens.org/datasets/movielens/ml-latest-small.zip", "", Unpack::archive}},
               {{"ratings.csv", "aa289ca83157595d0df6aea1be6a4ded676ddc4385472e8313a8ed9805352646"},
                {"movies.csv", "5a5f32dd9bb3797b8e728a1b98958789d2b13f294a69fdfbc5727f8a9611aa07"}},
               kMovieLensLicence, kMovieLensCitation});
  r.push_back({"movielens-100k", "MovieLens ml-100k: 100,000 ratings by 943 users of 1,682 movies",
               "movielens100k", "https://grouplens.org/datasets/movielens/100k/",
               {{"https://files.grouplens.org/datasets/movielens/ml-100k.zip", "", Unpack::archive}},
               {{"u.data", ""}, {"u.item", ""}, {"u.genre", ""}},
               kMovieLensLicence, kMovieLensCitation});
  r.push_back({"ogbn-arxiv", "ogbn-arxiv citation graph: 169,343 arXiv CS papers, 128 features, 40 subject classes",
               "", "https://ogb.stanford.edu/docs/nodeprop/#ogbn-arxiv",
               {{"http://snap.stanford.edu/ogb/data/nodeproppred/arxiv.zip", "", Unpack::archive}},
               {{"raw/edge.csv.gz", ""}, {"raw/node-feat.csv.gz", ""}, {"raw/node-label.csv.gz", ""},
                {"split/time/train.csv.gz", ""}, {"split/time/valid.csv.gz", ""}, {"split/time/test.csv.gz", ""}},
               "ODC-BY 1.0 (Open Data Commons Attribution License), as the Open Graph Benchmark states",
               "W. Hu, M. Fey, M. Zitnik, Y. Dong, H. Ren, B. Liu, M. Catasta, J. Leskovec. Open Graph Benchmark: "
               "Datasets for Machine Learning on Graphs. NeurIPS 2020."});
  std::sort(r.begin(), r.end(), [](const NamedDataset& a, const NamedDataset& b) { return a.name < b.name; });
  return r;
}

}  // namespace

const std::vector<NamedDataset>& registry() {
  static const std::vector<NamedDataset> datasets = make_registry();
  return datasets;
}

const NamedDataset* find_dataset(const std::string& name) {
  for (const NamedDataset& d : registry()) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

const NamedDataset& dataset_or_throw(const std::string& name) {
  if (const NamedDataset* d = find_dataset(name)) return *d;
  std::string known;
  for (const NamedDataset& d : registry()) known += (known.empty() ? "" : ", ") + d.name;
  throw UsageError("unknown dataset '" + name + "' (known: " + known + "; partita datasets list)");
}

bool needs_first_sum(const NamedDataset& d) {
  for (const RemoteFile& f : d.files) {
    if (!f.sha256.empty()) return false;
  }
  for (const ContentFile& c : d.contents) {
    if (!c.sha256.empty()) return false;
  }
  return true;
}

}  // namespace partita::datasets
