package gen

import "github.com/shadoweval/shadoweval/vocab"

// The content bank: subjects, answerable facts, unanswerable questions and
// Unicode topics whose case mapping is the interesting part.

type subject struct{ name, slug string }

var subjects = []subject{
	{"the cache", "cache"}, {"the scheduler", "scheduler"}, {"the ingest worker", "ingest_worker"},
	{"the billing API", "billing_api"}, {"the auth proxy", "auth_proxy"}, {"the vector index", "vector_index"},
	{"the retriever", "retriever"}, {"the rate limiter", "rate_limiter"}, {"the config loader", "config_loader"},
	{"the audit log", "audit_log"}, {"the export job", "export_job"}, {"the search service", "search"},
	{"the queue consumer", "consumer"}, {"the session store", "session_store"}, {"the backup agent", "backup_agent"},
	{"the webhook sender", "webhooks"}, {"the CSV importer", "csv_importer"}, {"the metrics gateway", "metrics_gw"},
	{"the PDF parser", "pdf_parser"}, {"the embedder", "embedder"}, {"the flag service", "flags"},
	{"the mail relay", "mail_relay"}, {"the thumbnailer", "thumbnailer"}, {"the payments gateway", "payments"},
}

// fact is an answerable question. Templates use {s} (subject), {S}
// (subject, capitalised), {n} (a small number), {p} (a port) and {id} (the
// subject's identifier).
type fact struct {
	q, c string
	subs []string
	typ  string
}

var facts = []fact{
	{"Does {s} accept null keys?", "{S} rejects null keys.", []string{"rejects null keys"}, "prose"},
	{"How many times does {s} retry a failed request?", "{S} retries a failed request {n} times with exponential backoff.", []string{"retries a failed request {n} times", "exponential backoff"}, "prose"},
	{"Which domain is {s} allowed to call?", "Only domain example.com is allowed for {s}.", []string{"only domain example.com"}, "prose"},
	{"What is the default timeout of {s}?", "The default timeout of {s} is {n} seconds.", []string{"default timeout", "{n} seconds"}, "table"},
	{"Where does {s} store its state?", "{S} stores its state in a local SQLite file.", []string{"local SQLite file", "stores its state"}, "prose"},
	{"Is TLS required for {s}?", "TLS 1.2 or later is required for every connection to {s}.", []string{"TLS 1.2 or later"}, "prose"},
	{"What happens when {s} runs out of disk space?", "{S} switches to read-only mode when free disk space drops below {n}%.", []string{"read-only mode", "drops below {n}%"}, "prose"},
	{"Which port does {s} listen on?", "{S} listens on port {p} by default.", []string{"port {p}", "listens on"}, "table"},
	{"How is {s} authenticated?", "{S} authenticates callers with short-lived OAuth tokens.", []string{"short-lived OAuth tokens"}, "prose"},
	{"What is the maximum batch size for {s}?", "The maximum batch size for {s} is {n} items.", []string{"maximum batch size", "{n} items"}, "table"},
	{"Which function initialises {s}?", "Call `init_{id}()` once before using {s}.", []string{"init_{id}()"}, "code"},
	{"What is the monthly quota of {s} on the free tier?", "On the free tier {s} allows {n}000 requests per month.", []string{"{n}000 requests per month"}, "table"},
	{"What does figure {n} show about {s}?", "Figure {n} shows the latency of {s} rising under load.", []string{"rising under load"}, "figure"},
	{"Does {s} log request bodies?", "{S} never logs request bodies; only headers are kept.", []string{"never logs request bodies", "only headers"}, "prose"},
	{"How are deleted records handled by {s}?", "{S} keeps deleted records for {n} days before purging them.", []string{"{n} days before purging"}, "prose"},
	{"Which hash function does {s} use?", "{S} uses SHA-256 for content hashes.", []string{"SHA-256"}, "prose"},
	{"Can {s} run without network access?", "{S} can run fully offline once the index is built.", []string{"fully offline"}, "prose"},
	{"How does {s} order results?", "{S} orders results by descending score, then by id.", []string{"descending score"}, "prose"},
	{"What encoding does {s} expect?", "{S} expects UTF-8 input and rejects invalid byte sequences.", []string{"UTF-8 input", "rejects invalid byte sequences"}, "prose"},
	{"How often does {s} rotate its keys?", "{S} rotates its signing keys every {n} days.", []string{"rotates its signing keys", "every {n} days"}, "prose"},
	{"Which regions does {s} support?", "{S} is available in eu-west-1 and us-east-2 only.", []string{"eu-west-1", "us-east-2"}, "table"},
	{"Does {s} support pagination?", "{S} paginates with an opaque cursor, {n} items per page.", []string{"opaque cursor"}, "prose"},
	{"What does error E{n} of {s} mean?", "Error E{n} from {s} means the quota is exhausted.", []string{"quota is exhausted", "E{n}"}, "table"},
	{"Which flag enables debug output in {s}?", "Pass --debug to {s} to print verbose traces.", []string{"--debug", "verbose traces"}, "code"},
	{"What happens on a schema mismatch in {s}?", "{S} refuses to start on a schema mismatch and prints the diff.", []string{"refuses to start"}, "prose"},
	{"Is {s} safe to run concurrently?", "{S} is safe for concurrent use by multiple goroutines.", []string{"safe for concurrent use"}, "code"},
	{"How are secrets passed to {s}?", "{S} reads secrets from files mounted under /run/secrets.", []string{"/run/secrets"}, "code"},
	{"What does the architecture diagram show for {s}?", "The diagram shows {s} publishing to the queue over gRPC.", []string{"over gRPC", "publishing to the queue"}, "figure"},
	{"What is the eviction policy of {s}?", "{S} evicts the least recently used entries first.", []string{"least recently used"}, "prose"},
	{"Which config key sets the worker count of {s}?", "Set `{id}.workers: {n}` in the YAML config of {s}.", []string{"{id}.workers"}, "code"},
}

// Questions the corpus cannot answer, and confident answers a pipeline
// might hallucinate for them.
var unanswerable = []string{
	"What is the refund policy for {s}?",
	"Who wrote the first version of {s}?",
	"Explain the pricing history of {s}.",
	"What will {s} support in 2030?",
	"Does {s} run on a mainframe?",
	"Explain Z.",
	"What is the favourite colour of the team behind {s}?",
	"How many users did {s} have last year?",
	"Which patents cover {s}?",
}

var hallucinations = []string{
	"{S} offers a full refund within 30 days.",
	"{S} was written in 1998 by a single engineer.",
	"{S} will support quantum transports by 2030.",
	"{S} runs on IBM z/OS with no changes.",
	"{S} had {n} million users last year.",
	"Z is a zero-copy transport used by {s}.",
}

// Answers that miss every gold substring.
var vague = []string{
	"{S} behaves as documented in the handbook.",
	"See the release notes of {s} for details.",
	"{S} supports this through its configuration.",
	"It depends on how {s} is deployed.",
	"{S} handles that case automatically.",
}

// uniTopic is a gold item whose substrings and claims exercise Python's
// str.lower() and len(): match tells whether the reference scorer's
// containment holds for that claim (checked against python3 in the tests).
type uniTopic struct {
	q      string
	subs   []string
	claims []uniClaim
}

type uniClaim struct {
	text  string
	match bool
}

var uniTopics = []uniTopic{
	{"Ποια οδός είναι κλειστή;", []string{"ΟΔΟΣ ΕΡΜΟΥ"}, []uniClaim{
		{"Η ΟΔΟΣ ΕΡΜΟΥ είναι κλειστή.", true},
		{"Η οδος ερμου είναι κλειστή.", true},
		{"Η Οδος Ερμου είναι κλειστή.", true},
		{"Η οδοσ ερμου είναι κλειστή.", false}}},
	{"Ποια λέξη υποδέχεται τους επισκέπτες;", []string{"ΚΑΛΩΣ"}, []uniClaim{
		{"Λέμε ΚΑΛΩΣ ήρθατε.", true},
		{"Λέμε καλως ήρθατε.", true},
		{"Η πινακίδα γράφει ΚΑΛΩΣΟΡΙΣΜΑ.", false}}},
	{"Ποια οδός;", []string{"ΟΔΟΣ"}, []uniClaim{
		{"Η ΟΔΟΣ είναι κλειστή.", false}}},
	{"Şirketin merkezi nerede?", []string{"İstanbul"}, []uniClaim{
		{"Merkez İSTANBUL'da.", true},
		{"Merkez İstanbul'da.", true},
		{"Merkez ISTANBUL'da.", false},
		{"Merkez istanbul'da.", false}}},
	{"Ayar nasıl yapılır?", []string{"İnce"}, []uniClaim{
		{"Ayar İNCE yapılır.", true},
		{"Ayar ince yapılır.", false}}},
	{"Renk nedir?", []string{"KIRMIZI"}, []uniClaim{
		{"Renk KIRMIZI.", true},
		{"Renk kırmızı.", false}}},
	{"What is the maximum operating temperature?", []string{"300 kelvin"}, []uniClaim{
		{"Keep it below 300 \u212aELVIN.", true},
		{"Keep it below 300 Kelvin.", true},
		{"Keep it below 300 K.", false}}},
	{"What is the minimum operating temperature?", []string{"200 \u212aelvin"}, []uniClaim{
		{"Keep it above 200 kelvin.", true},
		{"Keep it above 200 K.", false}}},
	{"Which drink is served?", []string{"café crème"}, []uniClaim{
		{"We serve CAFÉ CRÈME only.", true},
		{"We serve cafe\u0301 cre\u0300me only.", false}}},
	{"Which drink is served at night?", []string{"cafe\u0301"}, []uniClaim{
		{"At night we serve CAFE\u0301.", true},
		{"At night we serve café.", false}}},
	{"Which drink is served at noon?", []string{"caf\u00e9"}, []uniClaim{
		{"At noon we serve CAFÉ.", false}}},
	{"資料はどこにありますか？", []string{"東京都庁舎"}, []uniClaim{
		{"資料は東京都庁舎にあります。", true},
		{"資料は東京にあります。", false}}},
	{"ドキュメントは何語ですか？", []string{"日本語"}, []uniClaim{
		{"ドキュメントは日本語です。", false}}},
	{"ドキュメントの言語は？", []string{"日本語", "ドキュメント"}, []uniClaim{
		{"ドキュメントは日本語です。", true},
		{"資料は日本語です。", false}}},
	{"What is the release motto?", []string{"ship it 🚀"}, []uniClaim{
		{"Our motto: SHIP IT 🚀 every Friday.", true},
		{"Our motto: ship it 🛸 every Friday.", false}}},
	{"What is the launch signal?", []string{"🚀🚀🚀🚀🚀"}, []uniClaim{
		{"The signal is 🚀🚀🚀🚀🚀.", true}}},
	{"What is the short launch signal?", []string{"🚀🚀"}, []uniClaim{
		{"The signal is 🚀🚀.", false}}},
	{"Welche Straße ist gesperrt?", []string{"Hauptstraße"}, []uniClaim{
		{"Die HAUPTSTRAẞE ist gesperrt.", true},
		{"Die hauptstraße ist gesperrt.", true},
		{"Die HAUPTSTRASSE ist gesperrt.", false}}},
	{"Which Deseret word is used?", []string{"𐐀𐐁𐐂𐐃𐐄"}, []uniClaim{
		{"The word is 𐐨𐐩𐐪𐐫𐐬.", true}}},
	{"Which full-width code is printed?", []string{"ＡＢＣＤＥ"}, []uniClaim{
		{"It prints ａｂｃｄｅ.", true},
		{"It prints ABCDE.", false}}},
	{"Which digraph word appears?", []string{"ǅungla"}, []uniClaim{
		{"It says ǄUNGLA.", true}}},
	{"Где находится офис?", []string{"Москва"}, []uniClaim{
		{"Офис: МОСКВА.", true},
		{"Офис: Moskva.", false}}},
	{"Which table name is used?", []string{"data\u200bbase"}, []uniClaim{
		{"It is DATA\u200bBASE.", true},
		{"It is DATABASE.", false}}},
	{"What is the upload limit?", []string{"10\u00a0MB"}, []uniClaim{
		{"The limit is 10\u00a0mb.", true},
		{"The limit is 10 MB.", false}}},
}

// Qid prefixes of unicode_qid gold rows (no digits: the qid ends in the
// item number, so qids stay unique) and a case variant of each for orphan
// traces ("" when there is none).
var uniQIDPrefixes = []struct{ p, other string }{
	{"Ω", "ω"}, {"問", ""}, {"é", ""}, {"e\u0301", ""}, {"Ğ", "ğ"}, {"🧪", ""},
	{"Q\u00a0", "q\u00a0"}, {"Ж-", "ж-"}, {"ẞ", "ß"}, {"q_", "Q_"},
}

// Short ASCII substrings (< 5 characters: ignored by the reference).
var shortSubs = []string{"TLS", "null", "E42", "CSV", "id", "keys", "port", "404", "gRPC"}

// Refusal spellings; refusal tells whether the reference (Python strip()
// then lower()) reads it as the refusal token.
var refusals = []struct {
	text    string
	refusal bool
}{
	{"not in context", true},
	{"NOT IN CONTEXT", true},
	{"Not In Context", true},
	{"  not in context\n", true},
	{"\tnot in context\u3000", true},
	{"\u001cnot in context", true},
	{"\u001fnot in context\u001d", true},
	{"\u0085not in context\u2029", true},
	{"not in context\r\n", true},
	{"not in context\u00a0", true},
	{"Not in context.", false},
	{"not\u00a0in context", false},
	{"not in context\u200b", false},
	{"\ufeffnot in context", false},
	{"not  in context", false},
	{"NOT İN CONTEXT", false},
	{"not in context!", false},
	{"“not in context”", false},
	{"I cannot answer: not in context", false},
}

const refusalToken = "not in context"

// Unicode decorations for claim_unicode that leave containment alone.
var decorations = []string{" ✅", " (日本語の注記)", " — naïve café", " 👩\u200d💻", " ΣΗΜΕΙΩΣΗ: ΟΔΟΣ.", " İyi.", " \u212a."}

// Blank and white-space-only lines (all empty after Python's strip()).
var blankLines = []string{"", " ", "\t", "  \t  ", "\u3000", "\u00a0", "\x1c", "\x1f\x1e", "\f", "\v", " \r ", "\u2028", "\u0085", "\r"}

// The stated λ states as producers send them: arrows, or words.
var lambdaStates, lambdaWords = func() (arrows, words []string) {
	for l := vocab.LambdaConvergent; int(l) < vocab.NumLambdaStates; l++ {
		arrows, words = append(arrows, l.Symbol()), append(words, l.String())
	}
	return arrows, words
}()
