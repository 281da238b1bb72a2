//! Choosing one browser provider among several registered ones.
//!
//! Same semantics as the seed plugin's `BrowserRuntime`, resolved at the
//! moment of use and never dependent on registration order:
//! a configured id wins if registered and available; otherwise exactly one
//! available provider is required.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, RwLock};

use crate::error::{BrowserError, Result};

/// Something that can back browser sessions.
pub trait BrowserProvider: Send + Sync {
    /// Stable, unique id (such as `chromium`).
    fn id(&self) -> &str;
    /// Cheap local check whether the provider can serve now; no network calls.
    fn available(&self) -> bool;
}

/// The registered providers and the configured choice.
pub struct ProviderRegistry<P: ?Sized + BrowserProvider> {
    /// By id; a `BTreeMap` so listings are ordered.
    providers: RwLock<BTreeMap<String, Arc<P>>>,
    /// The id pinned by configuration, if any.
    configured: Option<String>,
}

impl<P: ?Sized + BrowserProvider> fmt::Debug for ProviderRegistry<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<String> = self.read().keys().cloned().collect();
        f.debug_struct("ProviderRegistry")
            .field("providers", &ids)
            .field("configured", &self.configured)
            .finish()
    }
}

impl<P: ?Sized + BrowserProvider> ProviderRegistry<P> {
    /// An empty registry; `configured` pins a provider id.
    pub fn new(configured: Option<String>) -> Self {
        Self {
            providers: RwLock::new(BTreeMap::new()),
            configured,
        }
    }

    /// Registers a provider.
    ///
    /// # Errors
    /// `PROVIDER_DUPLICATE` when its id is taken.
    pub fn register(&self, provider: Arc<P>) -> Result<()> {
        let id = provider.id().to_owned();
        let mut providers = self.providers.write().unwrap_or_else(|p| p.into_inner());
        if providers.contains_key(&id) {
            return Err(BrowserError::ProviderDuplicate { id });
        }
        providers.insert(id, provider);
        Ok(())
    }

    /// Removes a provider; returns whether it was registered.
    pub fn unregister(&self, id: &str) -> bool {
        self.providers
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id)
            .is_some()
    }

    /// The provider to use now.
    ///
    /// # Errors
    /// `PROVIDER_CONFIGURED_MISSING`, `PROVIDER_CONFIGURED_UNAVAILABLE`,
    /// `PROVIDER_UNAVAILABLE` or `PROVIDER_AMBIGUOUS`, as the seed defines them.
    pub fn select(&self) -> Result<Arc<P>> {
        let providers = self.read();
        if let Some(id) = &self.configured {
            let provider = providers
                .get(id)
                .ok_or_else(|| BrowserError::ProviderConfiguredMissing { id: id.clone() })?;
            if !provider.available() {
                return Err(BrowserError::ProviderConfiguredUnavailable { id: id.clone() });
            }
            return Ok(Arc::clone(provider));
        }
        let usable: Vec<&Arc<P>> = providers.values().filter(|p| p.available()).collect();
        match usable.as_slice() {
            [] => Err(BrowserError::ProviderUnavailable),
            [single] => Ok(Arc::clone(single)),
            many => Err(BrowserError::ProviderAmbiguous {
                ids: many.iter().map(|p| p.id().to_owned()).collect(),
            }),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<P>>> {
        self.providers.read().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    struct Fake {
        id: &'static str,
        up: AtomicBool,
    }

    impl BrowserProvider for Fake {
        fn id(&self) -> &str {
            self.id
        }
        fn available(&self) -> bool {
            self.up.load(Ordering::Relaxed)
        }
    }

    fn fake(id: &'static str, up: bool) -> Arc<Fake> {
        Arc::new(Fake {
            id,
            up: AtomicBool::new(up),
        })
    }

    fn selected(registry: &ProviderRegistry<Fake>) -> std::result::Result<String, &'static str> {
        registry
            .select()
            .map(|p| p.id.to_owned())
            .map_err(|e| e.code())
    }

    #[test]
    fn duplicate_ids_are_refused() {
        let registry = ProviderRegistry::new(None);
        assert!(registry.register(fake("a", true)).is_ok());
        assert_eq!(
            registry.register(fake("a", true)).err().map(|e| e.code()),
            Some("PROVIDER_DUPLICATE")
        );
    }

    #[test]
    fn auto_selection_needs_exactly_one_usable_provider() {
        let registry = ProviderRegistry::new(None);
        assert_eq!(selected(&registry), Err("PROVIDER_UNAVAILABLE"));
        registry.register(fake("down", false)).ok();
        assert_eq!(selected(&registry), Err("PROVIDER_UNAVAILABLE"));
        registry.register(fake("a", true)).ok();
        assert_eq!(selected(&registry), Ok("a".to_owned()));
        registry.register(fake("b", true)).ok();
        assert_eq!(selected(&registry), Err("PROVIDER_AMBIGUOUS"));
        assert!(registry.unregister("b"));
        assert_eq!(selected(&registry), Ok("a".to_owned()));
    }

    #[test]
    fn configured_id_wins_or_fails_precisely() {
        let registry = ProviderRegistry::new(Some("b".into()));
        registry.register(fake("a", true)).ok();
        assert_eq!(selected(&registry), Err("PROVIDER_CONFIGURED_MISSING"));
        let b = fake("b", false);
        registry.register(Arc::clone(&b)).ok();
        assert_eq!(selected(&registry), Err("PROVIDER_CONFIGURED_UNAVAILABLE"));
        b.up.store(true, Ordering::Relaxed);
        assert_eq!(selected(&registry), Ok("b".to_owned()));
    }
}
