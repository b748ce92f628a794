//! Maps of the schema read with every key once: the `deserialize_with` of every map field, so
//! that reading a report never keeps the last of a repeated key silently.

use std::collections::{BTreeMap, btree_map};
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

/// [`unique_keys`] for an optional map: `null` (or an absent field, with `#[serde(default)]`)
/// is `None`, a map with a key repeated is an error.
pub(crate) fn unique_keys_optional<'de, D, V>(
    deserializer: D,
) -> Result<Option<BTreeMap<String, V>>, D::Error>
where
    D: Deserializer<'de>,
    V: Deserialize<'de>,
{
    #[derive(Deserialize)]
    #[serde(bound = "V: Deserialize<'de>")]
    struct Unique<V>(#[serde(deserialize_with = "unique_keys")] BTreeMap<String, V>);
    Ok(Option::<Unique<V>>::deserialize(deserializer)?.map(|unique| unique.0))
}

/// Reads a map of the schema (a JSON object with free keys, such as `by_operator`) and refuses a
/// key given twice, which a map would otherwise keep the last of silently. Strict typed parsing
/// already refuses a struct field given twice; every map field of the schema names this function
/// in `#[serde(deserialize_with)]`, so the fast path refuses a repeated key at no extra cost and
/// hands the document to the careful path, which names the key with its path.
pub(crate) fn unique_keys<'de, D, V>(deserializer: D) -> Result<BTreeMap<String, V>, D::Error>
where
    D: Deserializer<'de>,
    V: Deserialize<'de>,
{
    struct UniqueKeys<V>(PhantomData<V>);

    impl<'de, V: Deserialize<'de>> Visitor<'de> for UniqueKeys<V> {
        type Value = BTreeMap<String, V>;

        fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
            formatter.write_str("a map")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Self::Value, A::Error> {
            let mut map = BTreeMap::new();
            while let Some((key, value)) = entries.next_entry::<String, V>()? {
                if let btree_map::Entry::Vacant(slot) = map.entry(key) {
                    slot.insert(value);
                } else {
                    return Err(de::Error::custom("duplicate key in a map"));
                }
            }
            Ok(map)
        }
    }

    deserializer.deserialize_map(UniqueKeys(PhantomData))
}
